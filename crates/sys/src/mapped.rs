//! Files read through a read-only memory mapping: a trace is read where the page cache holds
//! it, not copied into the process by each `read(2)` (on the development VM `read` took
//! 0.32-0.41 s for a 537 MB file, a mapping and a copy out of it 0.08-0.09 s). Pages behind the
//! reader are given back (`MADV_DONTNEED`: touched again, they are read again from the page
//! cache), so the memory a pass holds stays bounded whatever the file's size.
//!
//! A file cut shorter by another process while it is mapped makes the next access past its
//! new end fault (SIGBUS), as in every tool that maps its input (ripgrep, git); rtlab maps
//! only regular files it was asked to read and reads the rest (pipes, devices) with `read`.

use std::fs::File;
use std::io::{self, BufRead, Read};
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes a sequential reader moves past before it gives the pages behind it back.
const RELEASE_STEP: usize = 4 << 20;

/// Reads at an offset smaller than this keep their pages (a chunk's or a string's head is read
/// in a few bytes, then its body).
const RELEASE_AT_LEAST: usize = 512;

/// Bytes read at offsets between two sweeps that give back every page of the mapping (what
/// the reads' own releases leave: pages mapped around the ones read, the heads of compressed
/// chunks), so memory stays bounded whatever the order of the reads.
const SWEEP_BYTES: usize = 4 << 20;

/// A regular file mapped whole, read-only.
#[derive(Debug)]
pub struct Mapped {
    ptr: NonNull<u8>,
    len: usize,
    page: usize,
    /// Bytes read at offsets ([`Mapped::read_at`]) so far.
    read: AtomicUsize,
}

// SAFETY: the mapping is read-only and private to this value; nothing writes through it, so
// sharing the bytes across threads is as safe as sharing a `&[u8]`.
unsafe impl Send for Mapped {}
// SAFETY: as above.
unsafe impl Sync for Mapped {}

impl Mapped {
    /// Maps `file`; `None` when it is not a regular file, is empty, does not fit the address
    /// space or the kernel refuses (the caller reads it with `read`).
    pub fn of(file: &File) -> Option<Mapped> {
        let meta = file.metadata().ok()?;
        if !meta.is_file() {
            return None;
        }
        let len = usize::try_from(meta.len()).ok().filter(|&l| l > 0)?;
        // SAFETY: a fresh read-only private mapping of an open descriptor; the kernel picks
        // the address. The result is checked against MAP_FAILED before use.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return None;
        }
        // SAFETY: `ptr..ptr + len` is the mapping just made. Advice is only a hint: a
        // failure changes nothing.
        unsafe { libc::madvise(ptr, len, libc::MADV_SEQUENTIAL) };
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        Some(Mapped {
            ptr: NonNull::new(ptr.cast())?,
            len,
            page: usize::try_from(page).ok().filter(|&p| p > 0)?,
            read: AtomicUsize::new(0),
        })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping is `len` readable bytes, alive as long as `self`, never written.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// Gives back the pages wholly inside `from..to` (reading them again reads them again from
    /// the page cache).
    pub fn release(&self, from: usize, to: usize) {
        let start = from.div_ceil(self.page).saturating_mul(self.page);
        self.release_pages(start, to.min(self.len) / self.page * self.page);
    }

    /// Gives back the pages `start..end` (`start` page-aligned, `end` at most the length:
    /// the kernel rounds it up to the page the mapping ends in).
    fn release_pages(&self, start: usize, end: usize) {
        if start >= end {
            return;
        }
        // SAFETY: `start..end` lies inside the mapping, `start` page-aligned; MADV_DONTNEED on
        // a private file mapping never written only drops the pages from this process.
        unsafe {
            libc::madvise(
                self.ptr.as_ptr().add(start).cast(),
                end - start,
                libc::MADV_DONTNEED,
            )
        };
    }

    /// Copies the bytes at `offset` into `buf` (as `pread`); the bytes copied, 0 past the end.
    /// The pages a read touched are given back once copied, the partly read ones too (the
    /// CPUs' data of a recording is read a block or a compressed chunk at a time, each once),
    /// and every [`SWEEP_BYTES`] read all of them.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> usize {
        let bytes = self.bytes();
        let start = usize::try_from(offset).map_or(bytes.len(), |o| o.min(bytes.len()));
        let n = buf.len().min(bytes.len() - start);
        buf[..n].copy_from_slice(&bytes[start..start + n]);
        if n >= RELEASE_AT_LEAST {
            let end = (start + n).div_ceil(self.page).saturating_mul(self.page);
            self.release_pages(start / self.page * self.page, end.min(self.len));
        }
        let before = self.read.fetch_add(n, Ordering::Relaxed);
        if before / SWEEP_BYTES != before.saturating_add(n) / SWEEP_BYTES {
            self.release_pages(0, self.len);
        }
        n
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `of`, unmapped once; no borrow of it outlives `self`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// A mapped file read from start to end, as a [`BufRead`]: what is buffered is the rest of
/// the file, and the pages behind the reader are given back as it goes.
#[derive(Debug)]
pub struct MappedReader {
    map: Mapped,
    pos: usize,
    /// Pages before this (a page boundary) are given back.
    released: usize,
}

impl MappedReader {
    /// Reads `map` from its start.
    pub fn new(map: Mapped) -> MappedReader {
        MappedReader {
            map,
            pos: 0,
            released: 0,
        }
    }

    /// The mapping.
    pub fn into_inner(self) -> Mapped {
        self.map
    }
}

impl Read for MappedReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let rest = &self.map.bytes()[self.pos..];
        let n = buf.len().min(rest.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for MappedReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        Ok(&self.map.bytes()[self.pos..])
    }

    fn consume(&mut self, amt: usize) {
        self.pos = self.pos.saturating_add(amt).min(self.map.len);
        if self.pos - self.released >= RELEASE_STEP {
            // Up to the page the reader is in; that page goes with the next step.
            let end = self.pos / self.map.page * self.map.page;
            self.map.release(self.released, end);
            self.released = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_of(bytes: &[u8]) -> (tempfile::TempDir, File) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        File::create(&path).unwrap().write_all(bytes).unwrap();
        (dir, File::open(&path).unwrap())
    }

    #[test]
    fn a_mapped_file_reads_as_the_file_after_its_pages_are_given_back() {
        let bytes: Vec<u8> = (0..3 * RELEASE_STEP + 12_345)
            .map(|i| (i % 251) as u8)
            .collect();
        let (_dir, file) = file_of(&bytes);
        let mut r = MappedReader::new(Mapped::of(&file).unwrap());
        let mut read = Vec::new();
        loop {
            let n = {
                let b = r.fill_buf().unwrap();
                let n = b.len().min(100_003);
                read.extend_from_slice(&b[..n]);
                n
            };
            if n == 0 {
                break;
            }
            r.consume(n);
        }
        assert_eq!(read, bytes);
        assert!(r.released > 0, "pages behind were given back");
        // Given back from the start, in whole pages, none skipped between steps.
        assert_eq!(r.released % r.map.page, 0);
        assert!(r.released + RELEASE_STEP + r.map.page > bytes.len());
        // Given back, the pages read again from the page cache.
        let map = Mapped::of(&file).unwrap();
        map.release(0, bytes.len());
        let mut buf = vec![0u8; 1 << 20];
        assert_eq!(map.read_at(&mut buf, 5), 1 << 20);
        assert_eq!(buf[..], bytes[5..5 + (1 << 20)]);
        assert_eq!(map.bytes(), &bytes[..]);
        assert_eq!(map.read_at(&mut buf, bytes.len() as u64 + 9), 0);
    }

    #[test]
    fn what_cannot_be_mapped_is_read_the_ordinary_way() {
        let (_dir, empty) = file_of(b"");
        assert!(Mapped::of(&empty).is_none());
        let dir = tempfile::tempdir().unwrap();
        assert!(Mapped::of(&File::open(dir.path()).unwrap()).is_none());
    }
}
