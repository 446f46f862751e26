//! The one error every importer returns: the file, the line when one is to blame, and what
//! was expected there.

use std::fmt;

/// Why a file could not be imported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError {
    /// The file name as given.
    pub file: String,
    /// The 1-based line at fault, when one is.
    pub line: Option<usize>,
    /// What was wrong or expected (`expected a "# Total:" footer`).
    pub what: String,
}

impl ImportError {
    /// An error at `line` (1-based) of `file`.
    pub fn at(file: &str, line: usize, what: impl Into<String>) -> ImportError {
        ImportError {
            file: file.to_string(),
            line: Some(line),
            what: what.into(),
        }
    }

    /// An error about `file` as a whole.
    pub fn whole(file: &str, what: impl Into<String>) -> ImportError {
        ImportError {
            file: file.to_string(),
            line: None,
            what: what.into(),
        }
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}: line {line}: {}", self.file, self.what),
            None => write!(f, "{}: {}", self.file, self.what),
        }
    }
}

impl std::error::Error for ImportError {}
