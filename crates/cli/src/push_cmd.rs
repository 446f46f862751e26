//! `rtlab push [RUN...] --to URL`: the runs given read first (a RUN that is not a result is
//! the error, before anything is sent), then sent after the queue through [`crate::push_to`],
//! and the summary (text or `--format json`). `--status` is [`crate::push_status`].

use std::path::{Path, PathBuf};

use anyhow::Result;
use push::{About, Queue, Target};

use crate::console;
use crate::exit::{Exit, UsageError};
use crate::flags::PushArgs;
use crate::push_to::{Given, Outcome, Server, drain, queue, send_given, target_from, token};

/// Reads every RUN before anything is sent: a RUN that is not a result is the error.
fn read_given(args: &PushArgs) -> Result<Vec<Given>> {
    let db = args.db.db.as_deref();
    let mut given = Vec::with_capacity(args.runs.len());
    for spec in &args.runs {
        let run = crate::runs::load(spec, db)?;
        let (id, label, session) = if Path::new(spec).exists() {
            (None, None, None)
        } else {
            let (id, label, session) = crate::runs::stored_names(spec, db)?;
            (Some(id.to_string()), label, session)
        };
        given.push(Given {
            what: spec.clone(),
            document: run.to_json(),
            about: About::of(&run, id.as_deref()),
            label: args.label.clone().or(label),
            session: args.session.clone().or(session),
        });
    }
    Ok(given)
}

/// `rtlab push`.
pub fn run(args: &PushArgs) -> Result<Exit> {
    let queue = queue()?;
    if args.status {
        return crate::push_status::show(&queue, args.wants_json());
    }
    let target = target_from(args.to.as_deref(), "--to")?;
    let given = read_given(args)?;
    if !given.is_empty() && target.is_none() {
        return Err(UsageError(format!(
            "where to? give the server with --to URL or RTLAB_PUSH_URL ({})",
            push::URL_FORM
        ))
        .into());
    }
    // The servers to send to: the one given, else every server something is queued for.
    let listing = queue.list()?;
    let mut targets: Vec<Target> = match &target {
        Some(t) => vec![t.clone()],
        None => listing
            .entries
            .iter()
            .filter_map(|e| Target::parse(&e.run.target).ok())
            .collect(),
    };
    targets.sort();
    targets.dedup();
    let pending = listing
        .entries
        .iter()
        .filter(|e| targets.iter().any(|t| t.as_str() == e.run.target))
        .count();
    let mut out = Outcome {
        damaged: listing
            .damaged
            .into_iter()
            .map(|d| (d.path, d.why))
            .collect(),
        ..Outcome::default()
    };
    if given.is_empty() && pending == 0 {
        return finish(args, &queue, &out, true);
    }
    let token = token(args.token_file.as_deref())?;
    let mut given = given.into_iter();
    for t in targets {
        let mut server = Server::new(t, token.clone(), args.retry_for);
        drain(&queue, &mut server, &mut out)?;
        for g in given.by_ref() {
            send_given(&queue, &mut server, g, &mut out)?;
        }
    }
    finish(args, &queue, &out, args.runs.is_empty())
}

/// Prints what was done and decides the exit status: 0 when every RUN given is on the server
/// (without RUN: nothing is left queued), else 1.
fn finish(args: &PushArgs, queue: &Queue, out: &Outcome, draining: bool) -> Result<Exit> {
    if args.wants_json() {
        console::print_stdout(&outcome_json(queue, out))?;
    } else {
        let mut text = String::new();
        for (what, target, up, _) in &out.sent {
            let how = if up.new { "stored" } else { "already stored" };
            text.push_str(&format!("{what}: {how} as {} on {target}\n", up.id));
        }
        if draining && out.sent.is_empty() && out.queued.is_empty() && out.refused.is_empty() {
            text.push_str("nothing is queued to send\n");
        }
        console::print_stdout(&text)?;
    }
    for (what, _, why) in &out.refused {
        console::warning(&format!("{what} was refused: {why}"));
    }
    for (path, why) in &out.damaged {
        console::warning(&format!(
            "{}: a damaged queue file, left as it is: {why}",
            path.display()
        ));
    }
    if let Some((_, _, _, why)) = out.queued.first() {
        let mut files: Vec<&PathBuf> = out.queued.iter().map(|q| &q.2).collect();
        files.sort();
        files.dedup();
        let n = files.len();
        console::warning(why);
        console::warning(&format!(
            "{n} run{} queued in {}; `rtlab push` sends {} later (`rtlab push --queue` lists {})",
            if n == 1 { " is" } else { "s are" },
            queue.dir().display(),
            if n == 1 { "it" } else { "them" },
            if n == 1 { "it" } else { "them" },
        ));
    }
    let given_sent = out.sent.iter().filter(|s| !s.3).count();
    let ok = if draining {
        out.queued.is_empty() && out.refused.is_empty() && out.damaged.is_empty()
    } else {
        given_sent == args.runs.len()
    };
    Ok(if ok { Exit::Ok } else { Exit::VerdictFailed })
}

/// What a push did, as JSON (schema `rtlab.push/1`).
fn outcome_json(queue: &Queue, out: &Outcome) -> String {
    use serde_json::json;
    let doc = json!({
        "schema": "rtlab.push/1",
        "queue": queue.dir().display().to_string(),
        "sent": out.sent.iter().map(|(what, target, up, queued)| json!({
            "run": what, "target": target, "id": up.id, "new": up.new, "from_queue": queued,
        })).collect::<Vec<_>>(),
        "queued": out.queued.iter().map(|(what, target, file, why)| json!({
            "run": what, "target": target, "file": file.display().to_string(), "error": why,
        })).collect::<Vec<_>>(),
        "refused": out.refused.iter().map(|(what, target, why)| json!({
            "run": what, "target": target, "error": why,
        })).collect::<Vec<_>>(),
        "damaged": out.damaged.iter().map(|(file, why)| json!({
            "file": file.display().to_string(), "error": why,
        })).collect::<Vec<_>>(),
    });
    serde_json::to_string_pretty(&doc).expect("JSON values serialize") + "\n"
}
