//! The `rtlab` binary: parses the command line, hands each command to its room, prints errors
//! as one actionable line, and maps outcomes to exit statuses (see [`exit`]).
//!
//! This is the only crate that knows clap or the terminal; the rooms return data.

// A binary: `pub` items are visible to the crate only, as intended.
#![allow(unreachable_pub)]

mod audit_cmd;
mod campaign;
mod campaign_cmd;
mod compare_cmd;
mod console;
mod docs_cmd;
mod exec_cmd;
mod exit;
mod explain_cmd;
mod explain_stats;
mod flags;
mod hwlat_cmd;
mod import_cmd;
mod inspect_cmd;
mod irqd_cmd;
mod kconfig_cmd;
mod load_child;
mod load_cmd;
mod measure_cmd;
mod measured;
mod monitor;
mod noise_cmd;
mod pi_cmd;
mod push_cmd;
mod push_status;
mod push_to;
mod report_cmd;
mod rt_placement;
mod run_cmd;
mod run_session;
mod run_tuned;
mod run_verdict;
mod runs;
mod sched_cmd;
mod serve_cmd;
mod store_cmd;
mod trace_cmd;
mod tune_cmd;
mod tuning;
mod usage;
mod verdict;
mod worst_cmd;

// The build script's profile reading, tested with the binary's unit tests.
#[cfg(test)]
#[path = "../build/profile.rs"]
mod build_profile;

use std::process::ExitCode;

use sys::Root;

use crate::exit::{Exit, UsageError};
use crate::flags::Command;

fn main() -> ExitCode {
    // First: `--version` and every result built from here on say which binary this is.
    model::build::init(this_build());
    // Atomic writes sync a journal-less file system before each rename; whether an ext mount
    // keeps a journal only the mount table and the kernel's journals say, `sys`'s to read.
    files::set_ext_journal_probe(sys::mounts::ext_without_journal);
    // A panic is a bug, but it must not end rtlab with a signal or a backtrace on an input it
    // failed to bound: one line, the guards' destructors run (restoring the machine), exit 2.
    std::panic::set_hook(Box::new(|info| {
        // The board binaries are built without locations (a line of 0): none is said then.
        let at = info
            .location()
            .filter(|l| l.line() > 0)
            .map_or(String::new(), |l| format!(" at {}:{}", l.file(), l.line()));
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        console::error(&format!(
            "internal error{at}: {what}; this is a bug in rtlab, please report it with the command and its input"
        ));
    }));
    std::panic::catch_unwind(run).unwrap_or(ExitCode::from(2))
}

/// This binary's build facts, as its build script (crates/cli/build.rs) found them.
fn this_build() -> model::build::Build {
    model::build::Build::this_binary(
        env!("CARGO_PKG_VERSION"),
        env!("RTLAB_BUILD_COMMIT"),
        env!("RTLAB_BUILD_TARGET"),
        env!("RTLAB_BUILD_PROFILE"),
    )
}

/// Parses the command line and runs the command.
fn run() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match flags::parse(&argv) {
        Ok(cli) => cli,
        Err(e) => return usage::usage_error(&e, &argv),
    };
    for notice in flags::renamed::notices(&argv) {
        console::warning(&notice);
    }
    let root = cli.root.clone().map_or_else(Root::host, Root::at);
    if cli.root.is_some()
        && let Err(why) = root.check_kernel_tree()
    {
        console::error(&format!("--root: {why}"));
        return ExitCode::from(2);
    }
    let outcome = match &cli.command {
        Command::Measure(args) => measure_cmd::run(args, &root),
        Command::Noise(args) => noise_cmd::run(args, &root),
        Command::Hwlat(args) => hwlat_cmd::run(args, &root),
        Command::Load(args) => load_cmd::run(args, &root),
        Command::Audit(args) => audit_cmd::run(args, &root),
        Command::Inspect(args) => inspect_cmd::run(args, &root),
        Command::Kconfig(args) => kconfig_cmd::run(args),
        Command::Run(args) => run_cmd::run(args, &root),
        Command::Campaign(args) => campaign_cmd::run(args, &root),
        Command::Monitor(args) => monitor::run(args, &root),
        Command::Runs(args) => store_cmd::runs(args),
        Command::Show(args) => store_cmd::show(args),
        Command::Label(args) => store_cmd::label(args),
        Command::Rm(args) => store_cmd::rm(args),
        Command::Export(args) => store_cmd::export(args),
        Command::Compare(args) => compare_cmd::run(args),
        Command::Worst(args) => worst_cmd::run(args),
        Command::Report(args) => report_cmd::run(args),
        Command::Import(args) => import_cmd::run(args),
        Command::Push(args) => push_cmd::run(args),
        Command::Explain(args) => explain_cmd::run(args),
        Command::Trace(command) => trace_cmd::run(command, &root),
        Command::Sched(command) => sched_cmd::run(command, &root),
        Command::Tune(command) => tune_cmd::run(command, &root),
        Command::Exec(args) => exec_cmd::run(args, &root),
        Command::Pi(command) => pi_cmd::run(command, &root),
        Command::Serve(args) => serve_cmd::run(args),
        Command::Guardian => load_cmd::guardian(&root),
        Command::Completions { shell } => {
            docs_cmd::completions(*shell);
            Ok(Exit::Ok)
        }
        Command::Help { command } => docs_cmd::help(command),
        Command::Man { output } => docs_cmd::man_pages(output).map(|pages| {
            for p in pages {
                println!("{p}");
            }
            Exit::Ok
        }),
    };
    match outcome {
        Ok(exit) => exit.code(),
        Err(err) => {
            if let Some(usage) = err.downcast_ref::<UsageError>() {
                console::error(&usage.0);
            } else {
                console::error(&format!("{err:#}"));
            }
            ExitCode::from(2)
        }
    }
}
