//! The metadata's building blocks (numbers, strings, length-prefixed blocks) read either from
//! the file in order (version 6 lays its metadata out one part after another) or from a section
//! held in memory (version 7): one set of section readers serves both.

use crate::Error;
use crate::bytes::{Cursor, Endian, ReadAt, read_full, read_vec};

/// Reads the metadata's building blocks in order.
pub(crate) trait Input {
    /// The file offset of the next byte.
    fn offset(&self) -> u64;
    /// The next `n` bytes.
    fn take(&mut self, n: usize, what: &str) -> Result<Vec<u8>, Error>;
    /// A NUL-terminated string of at most `max` bytes.
    fn cstr(&mut self, max: usize, what: &str) -> Result<String, Error>;
    /// The byte order numbers are read in.
    fn endian(&self) -> Endian;

    fn u16(&mut self, what: &str) -> Result<u16, Error> {
        let b = self.take(2, what)?;
        Ok(self.endian().u16(&b))
    }

    fn u32(&mut self, what: &str) -> Result<u32, Error> {
        let b = self.take(4, what)?;
        Ok(self.endian().u32(&b))
    }

    fn u64(&mut self, what: &str) -> Result<u64, Error> {
        let b = self.take(8, what)?;
        Ok(self.endian().u64(&b))
    }

    /// A block prefixed by its length (`size_len` 4 or 8 bytes), refused past `limit`.
    fn sized(&mut self, size_len: usize, limit: u64, what: &str) -> Result<Vec<u8>, Error> {
        let at = self.offset();
        let len = if size_len == 4 {
            u64::from(self.u32(what)?)
        } else {
            self.u64(what)?
        };
        if len > limit {
            return Err(Error::damaged(
                format!("{what} claims {len} bytes, more than the {limit} rtlab reads"),
                at,
            ));
        }
        self.take(len as usize, what)
    }
}

/// The file read in order from an offset.
pub(crate) struct Seq<'r, R: ReadAt + ?Sized> {
    pub(crate) src: &'r R,
    pub(crate) pos: u64,
    pub(crate) endian: Endian,
    /// The file's length: no read is sized past it.
    pub(crate) len: u64,
}

impl<R: ReadAt + ?Sized> Input for Seq<'_, R> {
    fn offset(&self) -> u64 {
        self.pos
    }

    fn take(&mut self, n: usize, what: &str) -> Result<Vec<u8>, Error> {
        let v = read_vec(self.src, self.pos, n as u64, self.len, what)?;
        self.pos += n as u64;
        Ok(v)
    }

    fn cstr(&mut self, max: usize, what: &str) -> Result<String, Error> {
        let mut buf = vec![0u8; max + 1];
        let n = read_full(self.src, &mut buf, self.pos)?;
        let mut c = Cursor::new(&buf[..n], self.pos, self.endian);
        let s = c.cstr(max, what)?.to_string();
        self.pos += s.len() as u64 + 1;
        Ok(s)
    }

    fn endian(&self) -> Endian {
        self.endian
    }
}

impl Input for Cursor<'_> {
    fn offset(&self) -> u64 {
        Cursor::offset(self)
    }

    fn take(&mut self, n: usize, what: &str) -> Result<Vec<u8>, Error> {
        Ok(self.bytes(n, what)?.to_vec())
    }

    fn cstr(&mut self, max: usize, what: &str) -> Result<String, Error> {
        Ok(Cursor::cstr(self, max, what)?.to_string())
    }

    fn endian(&self) -> Endian {
        Cursor::endian(self)
    }
}
