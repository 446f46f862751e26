//! `rtlab monitor history` and `rtlab monitor incidents`: what the monitor kept, read from
//! the store, as lines, `rtlab.monitor/1` JSON or CSV.

use anyhow::Result;
use model::monitor::{HistoryDoc, Incident, Interval};
use sys::Root;

use crate::console;
use crate::exit::Exit;
use crate::flags::{HistoryArgs, HistoryFormat};

/// The first instant `--last` reaches back to, Unix ns.
fn from(args: &HistoryArgs) -> i64 {
    let since = i64::try_from(args.last.get()).unwrap_or(i64::MAX);
    super::plan::wall_ns().saturating_sub(since)
}

/// `rtlab monitor history`: a host's intervals in the `--last` TIME, oldest first.
pub(crate) fn history(args: &HistoryArgs, root: &Root) -> Result<Exit> {
    let store = crate::runs::open_existing(args.db.db.as_deref())?;
    let host = args
        .host
        .clone()
        .unwrap_or_else(|| sys::host::host_info(root).hostname);
    let intervals = store.intervals(&host, from(args), i64::MAX)?;
    let text = match args.format {
        HistoryFormat::Json => HistoryDoc::new(&host, intervals, Vec::new()).to_json_pretty(),
        HistoryFormat::Csv => report::monitor::history_csv(&intervals),
        HistoryFormat::Text => history_text(&host, args, &intervals),
    };
    console::print_stdout(&text)?;
    Ok(Exit::Ok)
}

/// `rtlab monitor incidents`: the incidents in the `--last` TIME, newest first.
pub(crate) fn incidents(args: &HistoryArgs) -> Result<Exit> {
    let store = crate::runs::open_existing(args.db.db.as_deref())?;
    let incidents = store.incidents(
        args.host.as_deref(),
        from(args),
        i64::MAX,
        store::MAX_HISTORY_ROWS,
    )?;
    let host = args.host.as_deref().unwrap_or("every host");
    let text = match args.format {
        HistoryFormat::Json => HistoryDoc::new(host, Vec::new(), incidents).to_json_pretty(),
        HistoryFormat::Csv => report::monitor::incidents_csv(&incidents),
        HistoryFormat::Text => incidents_text(host, args, &incidents),
    };
    console::print_stdout(&text)?;
    Ok(Exit::Ok)
}

fn history_text(host: &str, args: &HistoryArgs, intervals: &[Interval]) -> String {
    let Some(worst) = intervals
        .iter()
        .filter(|i| i.max_ns.is_some())
        .max_by_key(|i| i.max_ns)
    else {
        return format!(
            "no interval of {host} in the last {}: `rtlab monitor` keeps them (--host names another machine)\n",
            args.last
        );
    };
    let breaches: u64 = intervals.iter().map(|i| i.breaches).sum();
    let mut out = format!(
        "{} intervals of {host} in the last {}: worst {} us at {}, {breaches} wake-ups over the budget\n",
        intervals.len(),
        args.last,
        report::format_us(worst.max_ns.unwrap_or(0)),
        report::monitor::utc(worst.start_ns)
    );
    for i in intervals {
        out.push_str(&report::monitor::interval_line(i));
        out.push('\n');
    }
    out
}

fn incidents_text(host: &str, args: &HistoryArgs, incidents: &[Incident]) -> String {
    if incidents.is_empty() {
        return format!("no incident of {host} in the last {}\n", args.last);
    }
    let mut out = format!(
        "{} incidents of {host} in the last {}, newest first:\n",
        incidents.len(),
        args.last
    );
    for x in incidents {
        out.push_str(&report::monitor::incident_line(x));
        out.push('\n');
    }
    out
}
