//! rtlab's trace-cmd recordings (`trace.dat`): the binary file `trace-cmd record` writes, read
//! without trace-cmd, and written by `rtlab trace record`.
//!
//! - [`open`]: the initial format and the metadata of versions 6 and 7 (sections found through
//!   option sections, compressed or not) into a [`TraceDat`].
//! - [`format`]: event format files and the ring buffer's page header, and reading a field out
//!   of a record by them.
//! - [`meta`]: the kernel's symbols and the task names.
//! - [`options`]: what the options say (clock, time offsets, CPU count, where sections are).
//! - [`compress`]: zlib and zstd, bounded.
//! - [`page`]: one ring-buffer page's header and event headers.
//! - [`stream`]: the per-CPU pages merged into one time-ordered stream, in bounded memory.
//! - [`write`]: writing a recording, version 7 (compressed or not) or 6, in either byte order.
//! - [`bytes`]: byte order, bounds-checked reads, positional reads from a file or memory.
//!
//! Everything is data in, data out: the caller opens the file. Every length the file gives is
//! checked against the file and against `model::limits` before it is used; a damaged part is
//! an [`Error`] naming it, or (in the event stream) skipped and counted in a [`ReadReport`].

pub mod bytes;
pub mod compress;
mod error;
pub mod format;
mod input;
pub mod meta;
pub mod open;
pub mod options;
pub mod page;
pub mod stream;
pub mod write;

pub use bytes::{Endian, ReadAt};
pub use compress::Compression;
pub use error::Error;
pub use format::{EventFormat, Field, Loc, PageHeader};
pub use open::{Buffer, CpuData, TraceDat};
pub use stream::{Events, Item, ReadReport, Record};
pub use write::{Contents, CpuPages, write_v6, write_v7};

/// A recording over any source, behind one pointer: what the binary uses everywhere, so the
/// reader and the passes over it are compiled once, not once per kind of source.
pub type AnyDat = TraceDat<Box<dyn ReadAt>>;

/// Opens a recording from any source as an [`AnyDat`].
pub fn open_any(src: impl ReadAt + 'static) -> Result<AnyDat, Error> {
    TraceDat::open(Box::new(src) as Box<dyn ReadAt>)
}

/// The first bytes of a trace-cmd recording.
pub const MAGIC: &[u8] = b"\x17\x08\x44tracing";

/// Whether `head` (a file's first bytes) is a trace-cmd recording.
pub fn is_trace_dat(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}
