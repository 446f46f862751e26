//! Tells the binary what it is built from, for `rtlab --version` and the `build` field of every
//! result (`model::build`): the commit (`RTLAB_BUILD_COMMIT`, empty when unknown), the target
//! triple (`RTLAB_BUILD_TARGET`) and the cargo profile (`RTLAB_BUILD_PROFILE`).
//!
//! The commit is `RTLAB_COMMIT` when set (packagers building from a tarball), else what
//! `git rev-parse --short=12 HEAD` says in the workspace root, else unknown (no `.git`: a
//! source tarball, or no git). Cargo reruns this script when `RTLAB_COMMIT`, the checked-out
//! branch or the commit it points to changes, so the commit is never stale. Standard library
//! only: this runs before the binary is compiled, on every machine that builds it.

#[path = "build/profile.rs"]
mod profile;

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let workspace = Path::new(&var("CARGO_MANIFEST_DIR")).join("../..");
    println!("cargo:rerun-if-env-changed=RTLAB_COMMIT");
    let commit = match std::env::var("RTLAB_COMMIT") {
        Ok(given) => given_commit(&given),
        Err(_) => git_commit(&workspace),
    };
    println!(
        "cargo:rustc-env=RTLAB_BUILD_COMMIT={}",
        commit.unwrap_or_default()
    );
    println!("cargo:rustc-env=RTLAB_BUILD_TARGET={}", var("TARGET"));
    let profile = profile::from_out_dir(Path::new(&var("OUT_DIR")));
    println!(
        "cargo:rustc-env=RTLAB_BUILD_PROFILE={}",
        profile.as_deref().unwrap_or("unknown")
    );
}

/// An environment variable cargo always sets for a build script.
fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| fail(&format!("cargo did not set {name}")))
}

/// `RTLAB_COMMIT` checked: empty is unknown; otherwise 7 to 40 hex digits, kept to 12.
fn given_commit(given: &str) -> Option<String> {
    let given = given.trim();
    if given.is_empty() {
        return None;
    }
    if !(7..=40).contains(&given.len()) || !given.bytes().all(|b| b.is_ascii_hexdigit()) {
        fail(&format!(
            "RTLAB_COMMIT={given:?} is not a commit hash (7 to 40 hex digits); set it to the \
             output of `git rev-parse --short=12 HEAD`, or leave it unset"
        ));
    }
    Some(given[..given.len().min(12)].to_ascii_lowercase())
}

/// The commit checked out in `workspace`, with cargo told to rerun this script when it moves;
/// `None` without a `.git` there (a git repository further up is not this source's) or
/// without git.
fn git_commit(workspace: &Path) -> Option<String> {
    if !workspace.join(".git").exists() {
        return None;
    }
    // HEAD, the branch file it names (or, for a branch kept only in packed-refs, the
    // directory a new loose ref would appear in) and packed-refs. `--git-path` finds them in
    // linked worktrees too.
    let head = git_path(workspace, "HEAD")?;
    println!("cargo:rerun-if-changed={}", head.display());
    let branch = git(workspace, &["symbolic-ref", "-q", "HEAD"]);
    if let Some(loose) = branch.and_then(|b| git_path(workspace, &b)) {
        match (loose.exists(), loose.parent()) {
            (true, _) => println!("cargo:rerun-if-changed={}", loose.display()),
            (false, Some(dir)) if dir.exists() => {
                println!("cargo:rerun-if-changed={}", dir.display())
            }
            _ => {}
        }
    }
    if let Some(packed) = git_path(workspace, "packed-refs").filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", packed.display());
    }
    let commit = git(workspace, &["rev-parse", "--short=12", "HEAD"])?;
    commit
        .bytes()
        .all(|b| b.is_ascii_hexdigit())
        .then_some(commit)
}

/// Where git keeps `name` (a file under the git directory) for `workspace`.
fn git_path(workspace: &Path, name: &str) -> Option<PathBuf> {
    git(workspace, &["rev-parse", "--git-path", name]).map(|p| workspace.join(p))
}

/// git's one-line answer in `workspace`, `None` when it fails or is not installed.
fn git(workspace: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(workspace)
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty() && !text.contains('\n')).then(|| text.to_string())
}

/// Stops the build with `why`.
fn fail(why: &str) -> ! {
    eprintln!("error: {why}");
    std::process::exit(1);
}
