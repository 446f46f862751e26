//! What rtlab binary is running: its version, the commit it was built from, the target triple,
//! the C library and how it was linked, and the cargo profile. `rtlab --version` prints it and
//! every result records it (`build`), so a figure can be traced to the binary that made it — an
//! aarch64 musl build copied onto a board and an x86_64 glibc build on a laptop both say
//! `0.1.0`.
//!
//! This is the one process-wide fact in rtlab, set once by the binary at startup ([`init`])
//! and read where results are built ([`current`]). It is global rather than passed down
//! because it is a property of the executable itself, equal for every call in the process:
//! threading it through every room's configuration would add a parameter to each result
//! builder that no caller could ever set differently. The facts only the binary's build script
//! knows (commit, triple, profile) reach the library crates this way without a build script
//! of their own, which would rebuild the whole workspace on every commit. In library tests
//! nobody sets it: [`current`] is `None` and results leave the field out.

use std::fmt;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The binary that wrote a result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub struct Build {
    /// rtlab's version (`0.1.0`).
    pub version: String,
    /// The commit built, as a short hash; `None` when unknown (a source tarball).
    pub commit: Option<String>,
    /// The target triple (`aarch64-unknown-linux-musl`).
    pub target: String,
    /// The C library: `musl`, `glibc`, or the target environment's name for others.
    pub libc: String,
    /// `static` or `dynamic`.
    pub linkage: String,
    /// The cargo profile (`dev`, `release`, `dist`, ...).
    pub profile: String,
}

impl Build {
    /// The build facts of the code calling this: `version`, `commit`, `target` and `profile`
    /// as the binary's build script found them, the C library and linkage from how this crate
    /// was compiled (every crate of a binary is compiled for the same target). An empty
    /// `commit` means unknown.
    pub fn this_binary(version: &str, commit: &str, target: &str, profile: &str) -> Build {
        let libc = if cfg!(target_env = "musl") {
            "musl".to_string()
        } else if cfg!(target_env = "gnu") {
            "glibc".to_string()
        } else {
            target_env_name().to_string()
        };
        let linkage = if cfg!(target_feature = "crt-static") {
            "static"
        } else {
            "dynamic"
        };
        Build {
            version: version.to_string(),
            commit: (!commit.is_empty()).then(|| commit.to_string()),
            target: target.to_string(),
            libc,
            linkage: linkage.to_string(),
            profile: profile.to_string(),
        }
    }

    /// The commit, or `unknown`.
    pub fn commit_or_unknown(&self) -> &str {
        self.commit.as_deref().unwrap_or("unknown")
    }

    /// What `rtlab --version` prints after `rtlab `: the version, then one fact a line.
    pub fn long_version(&self) -> String {
        format!(
            "{}\ncommit:  {}\ntarget:  {}\nlibc:    {}, {}\nprofile: {}",
            self.version,
            self.commit_or_unknown(),
            self.target,
            self.libc,
            self.linkage,
            self.profile
        )
    }
}

/// One line for a report: `commit 8d89c6f1a2b3, x86_64-unknown-linux-musl, musl static,
/// profile dist` (the version is shown beside it).
impl fmt::Display for Build {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "commit {}, {}, {} {}, profile {}",
            self.commit_or_unknown(),
            self.target,
            self.libc,
            self.linkage,
            self.profile
        )
    }
}

/// The target environment's name for C libraries other than musl and glibc (`uclibc`,
/// `none` for bare targets).
fn target_env_name() -> &'static str {
    if cfg!(target_env = "uclibc") {
        "uclibc"
    } else if cfg!(target_env = "msvc") {
        "msvc"
    } else if cfg!(target_env = "") {
        "none"
    } else {
        "other"
    }
}

static CURRENT: OnceLock<Build> = OnceLock::new();

/// Records the running binary's build facts; the binary calls it first thing. A second call
/// changes nothing and returns `false`.
pub fn init(build: Build) -> bool {
    CURRENT.set(build).is_ok()
}

/// The running binary's build facts, or `None` where nobody called [`init`] (library tests).
pub fn current() -> Option<&'static Build> {
    CURRENT.get()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(commit: Option<&str>) -> Build {
        Build {
            version: "0.1.0".into(),
            commit: commit.map(str::to_string),
            target: "x86_64-unknown-linux-musl".into(),
            libc: "musl".into(),
            linkage: "static".into(),
            profile: "dist".into(),
        }
    }

    #[test]
    fn long_version_lists_one_fact_a_line() {
        assert_eq!(
            sample(Some("8d89c6f1a2b3")).long_version(),
            "0.1.0\n\
             commit:  8d89c6f1a2b3\n\
             target:  x86_64-unknown-linux-musl\n\
             libc:    musl, static\n\
             profile: dist"
        );
        assert!(sample(None).long_version().contains("\ncommit:  unknown\n"));
    }

    #[test]
    fn one_line_form_names_every_fact_but_the_version() {
        assert_eq!(
            sample(Some("8d89c6f1a2b3")).to_string(),
            "commit 8d89c6f1a2b3, x86_64-unknown-linux-musl, musl static, profile dist"
        );
        assert_eq!(
            sample(None).to_string(),
            "commit unknown, x86_64-unknown-linux-musl, musl static, profile dist"
        );
    }

    #[test]
    fn this_binary_reads_the_c_library_and_linkage_of_this_build() {
        let b = Build::this_binary("0.1.0", "", "x86_64-unknown-linux-gnu", "dev");
        assert_eq!(b.commit, None);
        let expected_libc = if cfg!(target_env = "musl") {
            "musl"
        } else if cfg!(target_env = "gnu") {
            "glibc"
        } else {
            b.libc.as_str()
        };
        assert_eq!(b.libc, expected_libc);
        assert_eq!(
            b.linkage == "static",
            cfg!(target_feature = "crt-static"),
            "{b:?}"
        );
        let b = Build::this_binary("0.1.0", "8d89c6f1a2b3", "t", "release");
        assert_eq!(b.commit.as_deref(), Some("8d89c6f1a2b3"));
        assert_eq!(b.profile, "release");
    }

    #[test]
    fn serialized_in_snake_case_and_read_back() {
        let b = sample(None);
        let json = serde_json::to_string(&b).unwrap();
        assert_eq!(
            json,
            r#"{"version":"0.1.0","commit":null,"target":"x86_64-unknown-linux-musl","libc":"musl","linkage":"static","profile":"dist"}"#
        );
        assert_eq!(serde_json::from_str::<Build>(&json).unwrap(), b);
        assert!(serde_json::from_str::<Build>(&json.replace("dist\"", "dist\",\"x\":1")).is_err());
    }

    #[test]
    fn nobody_sets_it_in_library_tests() {
        assert_eq!(current(), None);
    }
}
