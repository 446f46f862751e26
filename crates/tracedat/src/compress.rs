//! The compressions a version 7 recording may use for its sections and its trace data: none,
//! zlib (trace-cmd's `compress2`, a zlib stream) and zstd. Every output is bounded before it
//! is held and must come out exactly as long as the file said.

use std::io::Read;

use crate::Error;

/// A recording's compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed.
    None,
    /// zlib.
    Zlib,
    /// Zstandard.
    Zstd,
}

impl Compression {
    /// From the name the file gives; `None` for one rtlab does not read.
    pub fn from_name(name: &str) -> Option<Compression> {
        match name {
            "none" | "" => Some(Compression::None),
            "zlib" => Some(Compression::Zlib),
            "zstd" => Some(Compression::Zstd),
            _ => None,
        }
    }

    /// The name a file gives it.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Zlib => "zlib",
            Compression::Zstd => "zstd",
        }
    }

    /// `data` decompressed into `out` (cleared first), which must come to `expect` bytes
    /// (at most `limit`); `what` and `offset` name the part in errors.
    pub fn decompress_into(
        self,
        data: &[u8],
        expect: u64,
        limit: u64,
        out: &mut Vec<u8>,
        (what, offset): (&str, u64),
    ) -> Result<(), Error> {
        if expect > limit {
            return Err(Error::damaged(
                format!(
                    "{what} claims {expect} bytes uncompressed, more than the {limit} rtlab reads"
                ),
                offset,
            ));
        }
        out.clear();
        out.reserve(expect as usize);
        let bad =
            |e: std::io::Error| Error::damaged(format!("{what} does not decompress: {e}"), offset);
        match self {
            Compression::None => out.extend_from_slice(data),
            Compression::Zlib => {
                flate2::read::ZlibDecoder::new(data)
                    .take(expect + 1)
                    .read_to_end(out)
                    .map_err(bad)?;
            }
            Compression::Zstd => {
                let mut rest = data;
                let decoder = ruzstd::decoding::StreamingDecoder::new(&mut rest).map_err(|e| {
                    Error::damaged(format!("{what} does not decompress: {e}"), offset)
                })?;
                decoder.take(expect + 1).read_to_end(out).map_err(bad)?;
            }
        }
        if out.len() as u64 != expect {
            return Err(Error::damaged(
                format!(
                    "{what} decompresses to {} bytes, not the {expect} the file says",
                    out.len()
                ),
                offset,
            ));
        }
        Ok(())
    }

    /// `data` compressed (the writer's side); `None` stays as it is.
    pub fn compress(self, data: &[u8]) -> Vec<u8> {
        match self {
            Compression::None => data.to_vec(),
            Compression::Zlib => zlib_stored(data),
            Compression::Zstd => {
                ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
            }
        }
    }
}

/// `data` as a zlib stream of stored (uncompressed) deflate blocks: valid zlib that any reader
/// inflates, without a deflate encoder in the binary. rtlab records with zstd; zlib is written
/// only to rewrite a file in the form it came in, and to test the reader.
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / 65_535 * 5 + 11);
    out.extend_from_slice(&[0x78, 0x01]);
    let mut blocks = data.chunks(65_535).peekable();
    if blocks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(block) = blocks.next() {
        out.push(u8::from(blocks.peek().is_none()));
        let len = block.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
    }
    // Adler-32 of the data, big-endian.
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += u32::from(x);
            b += a;
        }
        a %= 65_521;
        b %= 65_521;
    }
    out.extend_from_slice(&((b << 16) | a).to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_zlib_is_what_zlib_reads() {
        for len in [0usize, 1, 65_535, 65_536, 200_000] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 % 256) as u8).collect();
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(&zlib_stored(&data)[..])
                .read_to_end(&mut out)
                .unwrap();
            assert_eq!(out, data, "{len} bytes");
        }
    }

    #[test]
    fn each_compression_comes_back_exactly_and_bounded() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        for c in [Compression::None, Compression::Zlib, Compression::Zstd] {
            let packed = c.compress(&data);
            let mut out = Vec::new();
            c.decompress_into(&packed, data.len() as u64, 1 << 20, &mut out, ("x", 0))
                .unwrap();
            assert_eq!(out, data, "{c:?}");
            let short = c.decompress_into(&packed, 10, 1 << 20, &mut out, ("x", 0));
            assert!(short.is_err(), "{c:?}: more than the file said");
            let over = c.decompress_into(&packed, 10_000, 100, &mut out, ("x", 0));
            assert!(over.is_err(), "{c:?}: past the limit");
            assert_eq!(Compression::from_name(c.name()), Some(c));
        }
        let mut out = Vec::new();
        let junk = Compression::Zstd.decompress_into(b"not zstd", 4, 100, &mut out, ("x", 7));
        assert!(junk.unwrap_err().to_string().contains("byte 7"));
    }
}
