//! Where the database lives by default, following the XDG Base Directory Specification
//! (<https://specifications.freedesktop.org/basedir-spec/latest/>): user data belongs under
//! `$XDG_DATA_HOME`, which defaults to `$HOME/.local/share`.

use std::ffi::OsString;
use std::path::PathBuf;

/// The database file's name inside the data directory.
pub const DB_FILE: &str = "rtlab.db";

/// The default database path: `RTLAB_DB` when set and non-empty, else
/// `$XDG_DATA_HOME/rtlab/rtlab.db` (when that is an absolute path, as the spec requires), else
/// `$HOME/.local/share/rtlab/rtlab.db`. `None` when none of them is set.
///
/// `env` looks up an environment variable (`|k| std::env::var_os(k)` in production), so tests
/// pass a fake one.
pub fn default_path(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let var = |key: &str| env(key).filter(|v| !v.is_empty());
    if let Some(db) = var("RTLAB_DB") {
        return Some(PathBuf::from(db));
    }
    let data_home = var("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".local/share")))?;
    Some(data_home.join("rtlab").join(DB_FILE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with(vars: &[(&str, &str)]) -> Option<PathBuf> {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|&(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        default_path(|k| map.get(k).cloned())
    }

    #[test]
    fn rtlab_db_wins_over_everything() {
        let all = [
            ("RTLAB_DB", "/srv/rt/results.db"),
            ("XDG_DATA_HOME", "/data"),
            ("HOME", "/home/ana"),
        ];
        assert_eq!(with(&all), Some(PathBuf::from("/srv/rt/results.db")));
        // A relative RTLAB_DB is the user's choice and kept as given.
        assert_eq!(
            with(&[("RTLAB_DB", "here.db"), ("HOME", "/home/ana")]),
            Some(PathBuf::from("here.db"))
        );
    }

    #[test]
    fn xdg_data_home_then_home() {
        assert_eq!(
            with(&[("XDG_DATA_HOME", "/data"), ("HOME", "/home/ana")]),
            Some(PathBuf::from("/data/rtlab/rtlab.db"))
        );
        assert_eq!(
            with(&[("HOME", "/home/ana")]),
            Some(PathBuf::from("/home/ana/.local/share/rtlab/rtlab.db"))
        );
    }

    #[test]
    fn empty_and_relative_values_are_ignored() {
        assert_eq!(
            with(&[("RTLAB_DB", ""), ("XDG_DATA_HOME", ""), ("HOME", "/root")]),
            Some(PathBuf::from("/root/.local/share/rtlab/rtlab.db"))
        );
        assert_eq!(
            with(&[("XDG_DATA_HOME", "relative/data"), ("HOME", "/root")]),
            Some(PathBuf::from("/root/.local/share/rtlab/rtlab.db"))
        );
        assert_eq!(with(&[]), None);
        assert_eq!(with(&[("HOME", "")]), None);
    }
}
