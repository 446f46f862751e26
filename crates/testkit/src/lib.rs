//! Dev-only helpers for rtlab's tests: [`FakeRoot`] builds a kernel tree (procfs/sysfs files)
//! in a temporary directory, [`fixture_root`] finds a captured tree under `fixtures/roots/`,
//! [`live`] makes a live test that cannot run say so (and fail under CI), [`examples`]
//! takes the commands out of README code blocks and help texts, [`runs`] makes measurement
//! results to judge and render, [`worst`] worst-case fits, and [`SplitMix`] draws reproducible uniform numbers.
//!
//! Never a dependency of shipped code.

pub mod examples;
mod fake_root;
mod fixtures;
pub mod live;
mod mix;
pub mod runs;
pub mod worst;

pub use fake_root::FakeRoot;
pub use fixtures::{copy_tree, fixture_names, fixture_root, fixtures_dir, tree_contents};
pub use mix::SplitMix;

#[cfg(test)]
mod host_tests;
