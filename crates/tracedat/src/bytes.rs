//! Reading numbers and strings out of the file's bytes in its own byte order, every read
//! bounds-checked; and positional reads from anything that holds the file.

use std::io;

use crate::Error;

/// Something a trace.dat can be read from by offset: a file, or its bytes in memory.
/// `Send + Sync`: one thread reads the pages while another decodes them (`trace::dat`).
pub trait ReadAt: Send + Sync {
    /// Reads into `buf` from `offset`; the bytes read (0 at the end).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// The length in bytes.
    fn size(&self) -> io::Result<u64>;
}

impl ReadAt for std::fs::File {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        std::os::unix::fs::FileExt::read_at(self, buf, offset)
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

impl ReadAt for [u8] {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.len());
        let n = buf.len().min(self.len() - start);
        buf[..n].copy_from_slice(&self[start..start + n]);
        Ok(n)
    }

    fn size(&self) -> io::Result<u64> {
        Ok(<[u8]>::len(self) as u64)
    }
}

impl ReadAt for Vec<u8> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.as_slice().read_at(buf, offset)
    }

    fn size(&self) -> io::Result<u64> {
        Ok(Vec::len(self) as u64)
    }
}

impl<T: ReadAt + ?Sized> ReadAt for Box<T> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        (**self).read_at(buf, offset)
    }

    fn size(&self) -> io::Result<u64> {
        (**self).size()
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &T {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        (**self).read_at(buf, offset)
    }

    fn size(&self) -> io::Result<u64> {
        (**self).size()
    }
}

/// Fills `buf` from `offset`; how many bytes there were (fewer at the end of the file).
pub(crate) fn read_full<R: ReadAt + ?Sized>(
    src: &R,
    buf: &mut [u8],
    offset: u64,
) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        let at = offset.saturating_add(done as u64);
        match src.read_at(&mut buf[done..], at) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// `len` bytes at `offset`, refused past `limit` (before anything is allocated) and when the
/// file ends first.
pub(crate) fn read_vec<R: ReadAt + ?Sized>(
    src: &R,
    offset: u64,
    len: u64,
    limit: u64,
    what: &str,
) -> Result<Vec<u8>, Error> {
    if len > limit {
        return Err(Error::damaged(
            format!("{what} claims {len} bytes, more than the {limit} rtlab reads"),
            offset,
        ));
    }
    let file_len = src.size()?;
    if offset.checked_add(len).is_none_or(|end| end > file_len) {
        return Err(Error::truncated(what, offset));
    }
    let mut buf = vec![0u8; len as usize];
    let n = read_full(src, &mut buf, offset)?;
    if n < buf.len() {
        return Err(Error::truncated(what, offset));
    }
    Ok(buf)
}

/// The file's byte order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Endian {
    /// Little-endian (x86, most ARM).
    #[default]
    Little,
    /// Big-endian (s390, some PowerPC and MIPS).
    Big,
}

impl Endian {
    /// A u16 from the first two bytes of `b` (which must hold them).
    #[inline(always)]
    pub fn u16(self, b: &[u8]) -> u16 {
        let a = [b[0], b[1]];
        match self {
            Endian::Little => u16::from_le_bytes(a),
            Endian::Big => u16::from_be_bytes(a),
        }
    }

    /// A u32 from the first four bytes of `b`.
    #[inline(always)]
    pub fn u32(self, b: &[u8]) -> u32 {
        let a = [b[0], b[1], b[2], b[3]];
        match self {
            Endian::Little => u32::from_le_bytes(a),
            Endian::Big => u32::from_be_bytes(a),
        }
    }

    /// A u64 from the first eight bytes of `b`.
    #[inline(always)]
    pub fn u64(self, b: &[u8]) -> u64 {
        let a = [b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]];
        match self {
            Endian::Little => u64::from_le_bytes(a),
            Endian::Big => u64::from_be_bytes(a),
        }
    }

    /// An unsigned number of `size` bytes (1, 2, 4 or 8) from `b`; `None` for another size or
    /// when `b` is shorter.
    #[inline(always)]
    pub fn uint(self, b: &[u8], size: usize) -> Option<u64> {
        // One bounds check and one byte swap: every field of every record comes through here.
        let le = match size {
            8 => u64::from_le_bytes(*b.first_chunk::<8>()?),
            4 => u64::from(u32::from_le_bytes(*b.first_chunk::<4>()?)),
            2 => u64::from(u16::from_le_bytes(*b.first_chunk::<2>()?)),
            1 => u64::from(*b.first()?),
            _ => return None,
        };
        Some(match self {
            Endian::Little => le,
            Endian::Big => le.swap_bytes() >> (64 - 8 * size),
        })
    }

    /// `v` as `size` bytes in this order (the writer's side).
    pub fn put(self, out: &mut Vec<u8>, v: u64, size: usize) {
        let bytes = match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        };
        match self {
            Endian::Little => out.extend_from_slice(&bytes[..size]),
            Endian::Big => out.extend_from_slice(&bytes[8 - size..]),
        }
    }
}

/// A bounds-checked reader over a part of the file held in memory; offsets in errors are the
/// file's (`base` plus the position).
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    base: u64,
    endian: Endian,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(buf: &'a [u8], base: u64, endian: Endian) -> Cursor<'a> {
        Cursor {
            buf,
            pos: 0,
            base,
            endian,
        }
    }

    /// The file offset of the next byte.
    pub(crate) fn offset(&self) -> u64 {
        self.base.saturating_add(self.pos as u64)
    }

    /// The byte order.
    pub(crate) fn endian(&self) -> Endian {
        self.endian
    }

    /// Whether everything was read.
    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// The next `n` bytes.
    pub(crate) fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8], Error> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| Error::truncated(what, self.offset()))?;
        let b = &self.buf[self.pos..end];
        self.pos = end;
        Ok(b)
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8, Error> {
        Ok(self.bytes(1, what)?[0])
    }

    pub(crate) fn u16(&mut self, what: &str) -> Result<u16, Error> {
        Ok(self.endian.u16(self.bytes(2, what)?))
    }

    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, Error> {
        Ok(self.endian.u32(self.bytes(4, what)?))
    }

    pub(crate) fn u64(&mut self, what: &str) -> Result<u64, Error> {
        Ok(self.endian.u64(self.bytes(8, what)?))
    }

    /// A NUL-terminated string (the NUL consumed, not returned), at most `max` bytes.
    pub(crate) fn cstr(&mut self, max: usize, what: &str) -> Result<&'a str, Error> {
        let rest = &self.buf[self.pos.min(self.buf.len())..];
        let window = &rest[..rest.len().min(max.saturating_add(1))];
        let len = window
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| Error::damaged(format!("{what}: no terminating NUL"), self.offset()))?;
        let text = std::str::from_utf8(&rest[..len])
            .map_err(|_| Error::damaged(format!("{what}: not UTF-8"), self.offset()))?;
        self.pos += len + 1;
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_in_either_order_and_refuse_short_input() {
        let b = [1u8, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(Endian::Little.u32(&b), 0x0403_0201);
        assert_eq!(Endian::Big.u32(&b), 0x0102_0304);
        assert_eq!(Endian::Big.uint(&b, 2), Some(0x0102));
        assert_eq!(Endian::Big.uint(&b[..1], 2), None);
        assert_eq!(Endian::Little.uint(&b, 3), None);
        let mut out = Vec::new();
        Endian::Big.put(&mut out, 0x0102, 2);
        Endian::Little.put(&mut out, 0x0102, 4);
        assert_eq!(out, [1, 2, 2, 1, 0, 0]);
    }

    #[test]
    fn a_cursor_names_what_ran_out() {
        let data = b"abc\0\x05\x00\x00\x00xyz";
        let mut c = Cursor::new(data, 100, Endian::Little);
        assert_eq!(c.cstr(16, "name").unwrap(), "abc");
        assert_eq!(c.u32("size").unwrap(), 5);
        let e = c.bytes(5, "block").unwrap_err();
        assert!(e.to_string().contains("block (at byte 108)"), "{e}");
        let mut c = Cursor::new(b"abcdef", 0, Endian::Little);
        assert!(c.cstr(3, "name").is_err(), "no NUL within the bound");
    }

    #[test]
    fn reads_refuse_claims_past_the_limit_or_the_file() {
        let data = vec![0u8; 10];
        assert!(read_vec(&data, 4, 6, 100, "x").is_ok());
        assert!(matches!(
            read_vec(&data, 4, 7, 100, "x"),
            Err(Error::Truncated { .. })
        ));
        assert!(matches!(
            read_vec(&data, u64::MAX, 2, 100, "x"),
            Err(Error::Truncated { .. })
        ));
        assert!(matches!(
            read_vec(&data, 0, 101, 100, "x"),
            Err(Error::Damaged { .. })
        ));
    }
}
