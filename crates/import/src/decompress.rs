//! Compressed imports: gzip, xz and zstd files recognised by their magic bytes (never by the
//! file name) and decompressed with a bound, so that an hour of `cyclictest -v | gzip` reads as
//! it is and a small file that expands without end (a "bomb") is refused with one line.
//!
//! Pure functions over bytes: the caller reads the file; decoders are pure Rust (decision
//! 0015).

use std::io::{self, Read, Write};

use crate::ImportError;

/// A compression `rtlab import` undoes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// gzip (`1f 8b`), one member or several in a row.
    Gzip,
    /// xz (`fd 37 7a 58 5a 00`).
    Xz,
    /// zstd (`28 b5 2f fd`), one frame or several in a row.
    Zstd,
}

impl Compression {
    /// The compression whose magic bytes `bytes` starts with.
    pub fn detect(bytes: &[u8]) -> Option<Compression> {
        if bytes.starts_with(&[0x1f, 0x8b]) {
            Some(Compression::Gzip)
        } else if bytes.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Some(Compression::Xz)
        } else if bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(Compression::Zstd)
        } else {
            None
        }
    }

    /// The compression for a person (`gzip`).
    pub fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Xz => "xz",
            Compression::Zstd => "zstd",
        }
    }
}

/// `bytes` decompressed when they start with a known magic, else `None`. More than `limit`
/// decompressed bytes, or a stream that does not decode, is an error naming `file`.
pub fn decompress(file: &str, bytes: &[u8], limit: u64) -> Result<Option<Vec<u8>>, ImportError> {
    let Some(kind) = Compression::detect(bytes) else {
        return Ok(None);
    };
    let mut out = Bounded {
        bytes: Vec::new(),
        limit,
    };
    let result = match kind {
        Compression::Gzip => gunzip(bytes, &mut out),
        Compression::Xz => unxz(bytes, &mut out),
        Compression::Zstd => unzstd(bytes, &mut out),
    };
    match result {
        Ok(()) => Ok(Some(out.bytes)),
        Err(e) if e.kind() == io::ErrorKind::FileTooLarge => Err(ImportError::whole(
            file,
            format!(
                "this {} file decompresses to more than {} MiB, more than rtlab imports; \
                 is it the right file?",
                kind.name(),
                limit >> 20
            ),
        )),
        Err(e) if e.kind() == io::ErrorKind::Unsupported => Err(ImportError::whole(
            file,
            format!("this {} file cannot be read: {e}", kind.name()),
        )),
        Err(e) => Err(ImportError::whole(
            file,
            format!(
                "the file starts as {} data but does not decompress ({e}); is it truncated?",
                kind.name()
            ),
        )),
    }
}

/// A sink that takes at most `limit` bytes and then fails with `FileTooLarge`.
struct Bounded {
    bytes: Vec<u8>,
    limit: u64,
}

impl Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let total = (self.bytes.len() as u64).saturating_add(buf.len() as u64);
        if total > self.limit {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                "over the limit",
            ));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Copies `reader` into `out` in pieces, so the bound stops a bomb before it is held.
fn copy_bounded(mut reader: impl Read, out: &mut Bounded) -> io::Result<()> {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => out.write_all(&buf[..n])?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

fn gunzip(bytes: &[u8], out: &mut Bounded) -> io::Result<()> {
    copy_bounded(flate2::read::MultiGzDecoder::new(bytes), out)
}

/// The most memory an xz block's dictionary and decoder may take: `xz -9` needs 65 MiB; a
/// header that asks for more (up to 4 GiB) is refused before anything is allocated.
const XZ_MEMORY_KIB: u32 = 128 << 10;

fn unxz(bytes: &[u8], out: &mut Bounded) -> io::Result<()> {
    let reader = lzma_rust2::XzReader::new_mem_limit(bytes, true, XZ_MEMORY_KIB);
    copy_bounded(reader, out).map_err(|e| {
        if e.kind() == io::ErrorKind::OutOfMemory {
            io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "its dictionary needs more than the {} MiB rtlab allows an xz file (xz -9 \
                 needs 65)",
                    XZ_MEMORY_KIB >> 10
                ),
            )
        } else {
            e
        }
    })
}

fn unzstd(bytes: &[u8], out: &mut Bounded) -> io::Result<()> {
    let mut rest = bytes;
    // One frame after another, as `zstd` writes for concatenated inputs.
    while !rest.is_empty() {
        let decoder = ruzstd::decoding::StreamingDecoder::new(&mut rest)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        copy_bounded(decoder, out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let path = format!(
            "{}/../../fixtures/imports/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// A zstd stream of raw (uncompressed) blocks, written by hand from RFC 8878 so the test
    /// needs no encoder: frame header with a single-segment content size, then blocks.
    fn zstd_raw(data: &[u8]) -> Vec<u8> {
        let mut out = vec![0x28, 0xb5, 0x2f, 0xfd];
        // Frame header descriptor: content size field 8 bytes (flag 3), single segment.
        out.push(0b1110_0000);
        out.extend_from_slice(&(data.len() as u64).to_le_bytes());
        let chunks: Vec<&[u8]> = if data.is_empty() {
            vec![&[]]
        } else {
            data.chunks(100_000).collect()
        };
        for (i, chunk) in chunks.iter().enumerate() {
            let last = u32::from(i + 1 == chunks.len());
            let header = last | ((chunk.len() as u32) << 3); // block type 0: raw
            out.extend_from_slice(&header.to_le_bytes()[..3]);
            out.extend_from_slice(chunk);
        }
        out
    }

    const TEXT: &[u8] =
        b"T: 0 ( 1234) P:80 I:1000 C:   1000 Min:      5 Act:    8 Avg:    9 Max:      33\n";

    /// (compressed, plain) pairs: made here, and by the `xz` and `zstd` tools.
    fn pairs() -> Vec<(Vec<u8>, Vec<u8>)> {
        vec![
            (gz(TEXT), TEXT.to_vec()),
            (zstd_raw(TEXT), TEXT.to_vec()),
            (
                fixture("compressed/local_oslat_2cpu.txt.xz"),
                fixture("local_oslat_2cpu.txt"),
            ),
            (
                fixture("compressed/local_cyclictest_2t_H100.hist.zst"),
                fixture("local_cyclictest_2t_H100.hist"),
            ),
        ]
    }

    #[test]
    fn each_compression_reads_back_and_plain_text_is_left_alone() {
        for (packed, plain) in pairs() {
            let got = decompress("f", &packed, 1 << 20).unwrap().unwrap();
            assert_eq!(got, plain);
        }
        assert_eq!(decompress("f", TEXT, 1 << 20).unwrap(), None);
    }

    #[test]
    fn concatenated_gzip_members_and_zstd_frames_read_whole() {
        let mut two = gz(b"first\n");
        two.extend(gz(b"second\n"));
        assert_eq!(
            decompress("f", &two, 1 << 20).unwrap().unwrap(),
            b"first\nsecond\n"
        );
        let mut two = zstd_raw(b"first\n");
        two.extend(zstd_raw(b"second\n"));
        assert_eq!(
            decompress("f", &two, 1 << 20).unwrap().unwrap(),
            b"first\nsecond\n"
        );
    }

    #[test]
    fn a_bomb_is_refused_with_one_line_naming_the_limit() {
        let zeros = vec![0u8; 3 << 20];
        // 3 MiB of zeros: made here, by `xz -9` (588 bytes) and `zstd -19` (114 bytes).
        for packed in [
            gz(&zeros),
            zstd_raw(&zeros),
            fixture("compressed/zeros_3MiB.xz"),
            fixture("compressed/zeros_3MiB.zst"),
        ] {
            let err = decompress("big.gz", &packed, 1 << 20).unwrap_err();
            let text = err.to_string();
            assert!(text.contains("decompresses to more than 1 MiB"), "{text}");
            assert!(!text.contains('\n'));
            // Exactly at the limit is accepted.
            let whole = decompress("f", &packed, 3 << 20).unwrap().unwrap();
            assert_eq!(whole.len(), 3 << 20);
        }
    }

    #[test]
    fn an_xz_dictionary_beyond_the_memory_bound_is_refused_before_allocation() {
        // TEXT compressed by xz, its block header patched to ask for a 3 GiB dictionary.
        let err = decompress("huge.xz", &fixture("compressed/dict_3GiB.xz"), 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("dictionary needs more than the 128 MiB"),
            "{err}"
        );
    }

    #[test]
    fn a_truncated_stream_says_so() {
        for (packed, _) in pairs() {
            let cut = &packed[..packed.len() / 2];
            let err = decompress("cut", cut, 1 << 20).unwrap_err().to_string();
            assert!(err.contains("does not decompress"), "{err}");
        }
    }
}
