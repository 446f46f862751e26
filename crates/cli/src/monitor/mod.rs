//! `rtlab monitor`: latency watched in production. [`plan`] checks everything before the work,
//! [`watch`] runs the intervals and their segments, [`incident`] turns breaches into incidents
//! and their effects, [`history`] reads back what was kept.

mod history;
mod incident;
mod plan;
mod pushing;
mod watch;

use anyhow::Result;
use sys::Root;

use crate::exit::Exit;
use crate::flags::{MonitorAction, MonitorArgs};

/// Runs `rtlab monitor` or one of its readers.
pub fn run(args: &MonitorArgs, root: &Root) -> Result<Exit> {
    match &args.action {
        Some(MonitorAction::History(h)) => history::history(h, root),
        Some(MonitorAction::Incidents(h)) => history::incidents(h),
        None => watch::watch(args, root),
    }
}
