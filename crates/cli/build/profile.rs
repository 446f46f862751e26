//! The cargo profile a build is made with, read from the build script's `OUT_DIR`: cargo
//! tells a build script the target triple but not the profile name, while the directory it
//! builds in is named after the profile. Shared by the build script and the binary's tests.

use std::path::Path;

/// The profile name from `OUT_DIR`, which is
/// `TARGET_DIR[/TRIPLE]/PROFILE_DIR/build/PACKAGE-HASH/out`: the directory three levels above
/// `out`, where `debug` is the `dev` profile (every other profile's directory carries its
/// name). `None` for a path of another shape.
pub(crate) fn from_out_dir(out_dir: &Path) -> Option<String> {
    if out_dir.file_name()? != "out" {
        return None;
    }
    let build = out_dir.parent()?.parent()?;
    if build.file_name()? != "build" {
        return None;
    }
    let dir = build.parent()?.file_name()?.to_str()?;
    Some(if dir == "debug" { "dev" } else { dir }.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_the_dev_profile() {
        let out = Path::new("/w/target/debug/build/rtlab-0123abcd/out");
        assert_eq!(from_out_dir(out).as_deref(), Some("dev"));
    }

    #[test]
    fn other_profiles_are_named_by_their_directory() {
        for (out, profile) in [
            ("/w/target/release/build/rtlab-1/out", "release"),
            (
                "/w/target/aarch64-unknown-linux-musl/dist/build/rtlab-2/out",
                "dist",
            ),
            (
                "target/armv7-unknown-linux-musleabihf/debug/build/rtlab-3/out",
                "dev",
            ),
            ("/w/target/profiling/build/rtlab-4/out/", "profiling"),
        ] {
            assert_eq!(
                from_out_dir(Path::new(out)).as_deref(),
                Some(profile),
                "{out}"
            );
        }
    }

    #[test]
    fn paths_of_another_shape_name_no_profile() {
        for out in [
            "/w/target/release/build/rtlab-1/out/x",
            "/w/target/release/rtlab-1/out",
            "build/rtlab-1/out",
            "out",
            "",
            "/",
        ] {
            assert_eq!(from_out_dir(Path::new(out)), None, "{out}");
        }
    }
}
