//! `rtlab push --queue`: the push queue as a table or JSON — per run its id, host, start,
//! server, tries, age and last error — with the files that could not be read and how many
//! runs the servers refused.

use std::time::SystemTime;

use anyhow::Result;
use push::{Listing, Queue};

use crate::console;
use crate::exit::Exit;

/// Shows the queue; exit 0.
pub fn show(queue: &Queue, json: bool) -> Result<Exit> {
    let listing = queue.list()?;
    let now = SystemTime::now();
    let text = if json {
        as_json(queue, &listing, now)
    } else {
        as_table(queue, &listing, now)
    };
    console::print_stdout(&text)?;
    Ok(Exit::Ok)
}

/// Seconds since a run was queued.
fn age_secs(queued: Option<SystemTime>, now: SystemTime) -> Option<u64> {
    queued
        .and_then(|t| now.duration_since(t).ok())
        .map(|d| d.as_secs())
}

/// An age in its largest unit: `42s`, `5m`, `3h`, `2d`.
fn age_text(secs: Option<u64>) -> String {
    match secs {
        None => "-".to_string(),
        Some(s) if s < 60 => format!("{s}s"),
        Some(s) if s < 3600 => format!("{}m", s / 60),
        Some(s) if s < 86_400 => format!("{}h", s / 3600),
        Some(s) => format!("{}d", s / 86_400),
    }
}

fn as_table(queue: &Queue, listing: &Listing, now: SystemTime) -> String {
    let clean = |v: &Option<String>| v.as_deref().map_or("-".to_string(), push::one_line);
    let mut rows = vec![
        [
            "RUN",
            "HOST",
            "STARTED",
            "SERVER",
            "TRIES",
            "AGE",
            "LAST ERROR",
        ]
        .map(String::from),
    ];
    for e in &listing.entries {
        let r = &e.run;
        let file = e.path.file_name().map_or(String::new(), |n| {
            n.to_string_lossy().chars().take(12).collect()
        });
        rows.push([
            r.run_id.as_deref().map_or(file, push::one_line),
            clean(&r.host),
            clean(&r.started_at),
            r.target.clone(),
            r.attempts.to_string(),
            age_text(age_secs(r.queued_time(), now)),
            clean(&r.last_error),
        ]);
    }
    let mut out = format!("push queue: {}\n", queue.dir().display());
    if listing.entries.is_empty() {
        out.push_str("no runs waiting\n");
    } else {
        let mut widths = [0usize; 6];
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for row in &rows {
            let mut line = String::new();
            for (cell, w) in row.iter().zip(widths) {
                line.push_str(&format!("{cell:<w$}  "));
            }
            line.push_str(&row[6]);
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    for d in &listing.damaged {
        out.push_str(&format!(
            "damaged, left as it is: {}: {}\n",
            d.path.display(),
            d.why
        ));
    }
    if listing.refused > 0 {
        out.push_str(&format!(
            "{} run{} refused by a server, kept in {}\n",
            listing.refused,
            if listing.refused == 1 { "" } else { "s" },
            queue.dir().join(push::REFUSED_DIR).display()
        ));
    }
    out
}

fn as_json(queue: &Queue, listing: &Listing, now: SystemTime) -> String {
    use serde_json::json;
    let doc = json!({
        "schema": "rtlab.push-queue-status/1",
        "queue": queue.dir().display().to_string(),
        "runs": listing.entries.iter().map(|e| {
            let r = &e.run;
            json!({
                "file": e.path.display().to_string(),
                "run_id": r.run_id, "host": r.host, "started_at": r.started_at,
                "target": r.target, "label": r.label, "session": r.session,
                "queued_at": r.queued_at, "attempts": r.attempts, "last_error": r.last_error,
                "age_s": age_secs(r.queued_time(), now),
            })
        }).collect::<Vec<_>>(),
        "damaged": listing.damaged.iter().map(|d| json!({
            "file": d.path.display().to_string(), "error": d.why,
        })).collect::<Vec<_>>(),
        "refused": listing.refused,
    });
    serde_json::to_string_pretty(&doc).expect("JSON values serialize") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_are_shown_in_their_largest_unit() {
        assert_eq!(age_text(None), "-");
        assert_eq!(age_text(Some(42)), "42s");
        assert_eq!(age_text(Some(300)), "5m");
        assert_eq!(age_text(Some(3 * 3600 + 5)), "3h");
        assert_eq!(age_text(Some(2 * 86_400)), "2d");
    }
}
