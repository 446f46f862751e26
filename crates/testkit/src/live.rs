//! Live tests that cannot run must say so — and in CI they must fail, not pass.
//!
//! A live test that returns early because it is not root, or because tracefs, a cgroup
//! controller or a tool is missing, is a green check that checked nothing. [`skip`] prints
//! the reason as a visible `SKIPPED` line when a developer runs the suite without what the
//! test needs; under CI (the `CI` variable set, as `.ci/run` does and CI systems do, with
//! root and tracefs provided) it panics instead, so a missing install step or a feature CI
//! lost shows as a failure.

/// Whether the tests run under CI: `CI` is set to anything but empty, `0`, `false` or `no`.
pub fn in_ci() -> bool {
    ci_from(std::env::var("CI").ok().as_deref())
}

/// The rule of [`in_ci`] on the variable's value (`None`: unset).
fn ci_from(value: Option<&str>) -> bool {
    value.is_some_and(|v| {
        !matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "" | "0" | "false" | "no"
        )
    })
}

/// Whether the tests run as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Skips a live test for `why`: a `SKIPPED` line on standard error, or, under CI, a panic
/// (the test fails) because CI promises what live tests need.
#[track_caller]
pub fn skip(why: &str) {
    if in_ci() {
        panic!(
            "live test cannot run in CI: {why} (CI provides root, tracefs and the tools; fix the CI setup)"
        );
    }
    eprintln!("SKIPPED (checked nothing): {why}");
}

/// `true` as root; otherwise skips with `why` (see [`skip`]) and returns `false`, so a test
/// starts with `if !testkit::live::root_or_skip("...") { return; }`.
#[track_caller]
pub fn root_or_skip(why: &str) -> bool {
    if is_root() {
        return true;
    }
    skip(&format!("not root: {why}"));
    false
}

/// The variable naming a PostgreSQL server the tests may create databases on, as
/// `postgres://user@host:port/database` (a user allowed to `CREATE DATABASE`). `.ci/run`
/// starts a throwaway server and sets it; README.md says how a developer does the same.
pub const POSTGRES_VAR: &str = "RTLAB_TEST_POSTGRES";

/// The test PostgreSQL server's address, or `None` after skipping with the reason (see
/// [`skip`]: under CI that fails the test).
#[track_caller]
pub fn postgres_or_skip() -> Option<String> {
    match std::env::var(POSTGRES_VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            skip(&format!(
                "{POSTGRES_VAR} is not set: no PostgreSQL server to test the store against \
                 (README.md, Testing, says how to start one)"
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_is_any_value_but_empty_zero_false_or_no() {
        for (value, ci) in [
            (None, false),
            (Some(""), false),
            (Some(" "), false),
            (Some("0"), false),
            (Some("false"), false),
            (Some("FALSE"), false),
            (Some("False"), false),
            (Some("no"), false),
            (Some("true"), true),
            (Some("1"), true),
            (Some("yes"), true),
            (Some("gitlab"), true),
        ] {
            assert_eq!(ci_from(value), ci, "CI={value:?}");
        }
    }
}
