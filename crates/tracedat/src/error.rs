//! What can go wrong opening a trace.dat: the file could not be read, it is not one, it is of a
//! kind rtlab does not read, or a part of it is damaged (named, with its offset).

use std::fmt;
use std::io;

/// Why a trace.dat could not be opened (or a part of it not read).
#[derive(Debug)]
pub enum Error {
    /// Reading the file failed.
    Io(io::Error),
    /// The file does not start with trace-cmd's magic.
    NotTraceDat,
    /// A version, compression or layout rtlab does not read.
    Unsupported(String),
    /// The file is cut short: `what` lies past its end.
    Truncated {
        /// The part that is missing.
        what: String,
        /// Where it should be.
        offset: u64,
    },
    /// A part of the file does not hold what the format says it must.
    Damaged {
        /// The part, and what is wrong with it.
        what: String,
        /// Where it is.
        offset: u64,
    },
}

impl Error {
    pub(crate) fn damaged(what: impl Into<String>, offset: u64) -> Error {
        Error::Damaged {
            what: what.into(),
            offset,
        }
    }

    pub(crate) fn truncated(what: impl Into<String>, offset: u64) -> Error {
        Error::Truncated {
            what: what.into(),
            offset,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "{e}"),
            Error::NotTraceDat => f.write_str("not a trace-cmd recording (no trace.dat magic)"),
            Error::Unsupported(what) => f.write_str(what),
            Error::Truncated { what, offset } => {
                write!(
                    f,
                    "the file is cut short: {what} (at byte {offset}) is past its end"
                )
            }
            Error::Damaged { what, offset } => write!(f, "damaged at byte {offset}: {what}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io(e)
    }
}
