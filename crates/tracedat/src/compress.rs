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
            Compression::Zlib => {
                use std::io::Write;
                let mut e =
                    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
                // Writing to a Vec cannot fail.
                let _ = e.write_all(data);
                e.finish().unwrap_or_default()
            }
            Compression::Zstd => {
                ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
