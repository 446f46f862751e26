//! Each generator's arguments, read: `cpu:PERCENT%`, `timer-storm:THREADS`,
//! `messaging:GROUPSxFDS:socket|pipe:thread|process`, `memory:SIZE|auto:WORKERS`,
//! `io:SIZE:WORKERS`, `net:tcp|udp:FLOWS` and `fork:WORKERS` (`cmd` takes its item whole and
//! is read by the caller), with defaults and limits from [`defaults`].

use super::defaults::{self, *};
use super::{
    GeneratorKind, LoadSpecError, NAMES, Protocols, TaskKind, Transport, err, format_size,
    parse_size,
};

/// The generator `name` with its `args`, read; `item` is the whole item, for errors.
pub(super) fn parse_kind(
    item: &str,
    name: &str,
    args: &[&str],
) -> Result<GeneratorKind, LoadSpecError> {
    match name {
        "cpu" => cpu(item, args),
        "timer-storm" => timer_storm(item, args),
        "messaging" => messaging(item, args),
        "memory" => memory(item, args),
        "io" => io(item, args),
        "net" => net(item, args),
        "fork" => fork(item, args),
        other => Err(err(
            item,
            format!("unknown generator '{other}'; choose from {NAMES}"),
        )),
    }
}

/// `cpu[:PERCENT%]`: a duty cycle of 1% to 100%, 100% when not given.
fn cpu(item: &str, args: &[&str]) -> Result<GeneratorKind, LoadSpecError> {
    if args.len() > 1 {
        return Err(too_many(item, "cpu[:PERCENT%]"));
    }
    let percent = match args.first() {
        None => 100,
        Some(a) => {
            let digits = a.strip_suffix('%').unwrap_or(a);
            let value: u32 = digits.parse().map_err(|_| {
                err(
                    item,
                    format!("'{a}' is not a duty cycle; write e.g. cpu:60%"),
                )
            })?;
            if !(1..=100).contains(&value) {
                return Err(err(item, "the duty cycle must be 1% to 100%"));
            }
            value as u8
        }
    };
    Ok(GeneratorKind::Cpu { percent })
}

/// `timer-storm[:THREADS]`.
fn timer_storm(item: &str, args: &[&str]) -> Result<GeneratorKind, LoadSpecError> {
    if args.len() > 1 {
        return Err(too_many(item, "timer-storm[:THREADS]"));
    }
    let threads = match args.first() {
        None => TIMER_STORM_THREADS,
        Some(a) => count(item, a, "threads")?,
    };
    Ok(GeneratorKind::TimerStorm { threads })
}

/// `messaging[:GROUPSxFDS][:socket|pipe][:thread|process]`, the arguments in any order, at
/// most [`MAX_TASKS`] tasks in all.
fn messaging(item: &str, args: &[&str]) -> Result<GeneratorKind, LoadSpecError> {
    let usage = "messaging[:GROUPSxFDS][:socket|pipe][:thread|process]";
    let (mut groups, mut fds) = (MESSAGING_GROUPS, MESSAGING_FDS);
    let (mut transport, mut tasks) = (None, None);
    let mut shape = false;
    for a in args {
        match *a {
            "socket" | "sockets" if transport.is_none() => transport = Some(Transport::Socket),
            "pipe" | "pipes" if transport.is_none() => transport = Some(Transport::Pipe),
            "thread" | "threads" if tasks.is_none() => tasks = Some(TaskKind::Thread),
            "process" | "processes" if tasks.is_none() => tasks = Some(TaskKind::Process),
            a if !shape && a.contains('x') => {
                let (g, f) = a.split_once('x').unwrap_or_default();
                groups = count(item, g, "groups")?;
                fds = count(item, f, "senders per group")?;
                shape = true;
            }
            a => {
                return Err(err(item, format!("unexpected '{a}'; usage: {usage}")));
            }
        }
    }
    let total = u64::from(groups) * u64::from(fds) * 2;
    if total > u64::from(MAX_TASKS) {
        return Err(err(
            item,
            format!("{total} tasks is more than the limit of {MAX_TASKS}"),
        ));
    }
    Ok(GeneratorKind::Messaging {
        groups,
        fds,
        transport: transport.unwrap_or(Transport::Socket),
        tasks: tasks.unwrap_or(TaskKind::Thread),
    })
}

/// `memory[:SIZE|auto][:WORKERS]`.
fn memory(item: &str, args: &[&str]) -> Result<GeneratorKind, LoadSpecError> {
    if args.len() > 2 {
        return Err(too_many(item, "memory[:SIZE|auto][:WORKERS]"));
    }
    let bytes = match args.first() {
        None | Some(&"auto") => None,
        Some(a) => Some(size(item, a, MEMORY_MIN_BYTES)?),
    };
    let workers = args.get(1).map_or(Ok(1), |a| count(item, a, "workers"))?;
    Ok(GeneratorKind::Memory { bytes, workers })
}

/// `io[:SIZE][:WORKERS]`.
fn io(item: &str, args: &[&str]) -> Result<GeneratorKind, LoadSpecError> {
    if args.len() > 2 {
        return Err(too_many(item, "io[:SIZE][:WORKERS]"));
    }
    let bytes = args
        .first()
        .map_or(Ok(IO_BYTES), |a| size(item, a, IO_MIN_BYTES))?;
    let workers = args.get(1).map_or(Ok(1), |a| count(item, a, "workers"))?;
    Ok(GeneratorKind::Io { bytes, workers })
}

/// `net[:tcp|udp][:FLOWS]`, the arguments in any order; both protocols and one flow when
/// not given.
fn net(item: &str, args: &[&str]) -> Result<GeneratorKind, LoadSpecError> {
    let mut protocols = None;
    let mut flows = None;
    for a in args {
        match *a {
            "tcp" if protocols.is_none() => protocols = Some(Protocols::Tcp),
            "udp" if protocols.is_none() => protocols = Some(Protocols::Udp),
            a if flows.is_none() && a.bytes().all(|b| b.is_ascii_digit()) => {
                flows = Some(count(item, a, "flows")?)
            }
            a => {
                return Err(err(
                    item,
                    format!("unexpected '{a}'; usage: net[:tcp|udp][:FLOWS]"),
                ));
            }
        }
    }
    Ok(GeneratorKind::Net {
        protocols: protocols.unwrap_or(Protocols::Both),
        flows: flows.unwrap_or(1),
    })
}

/// `fork[:WORKERS]`.
fn fork(item: &str, args: &[&str]) -> Result<GeneratorKind, LoadSpecError> {
    if args.len() > 1 {
        return Err(too_many(item, "fork[:WORKERS]"));
    }
    let workers = args.first().map_or(Ok(1), |a| count(item, a, "workers"))?;
    Ok(GeneratorKind::Fork { workers })
}

fn too_many(item: &str, usage: &str) -> LoadSpecError {
    err(item, format!("too many arguments; usage: {usage}"))
}

fn count(item: &str, text: &str, what: &str) -> Result<u32, LoadSpecError> {
    let n: u32 = text.parse().map_err(|_| {
        err(
            item,
            format!("'{text}' is not a number of {what}; write a whole number"),
        )
    })?;
    if n == 0 || n > defaults::MAX_TASKS {
        return Err(err(
            item,
            format!("{what} must be 1 to {}", defaults::MAX_TASKS),
        ));
    }
    Ok(n)
}

fn size(item: &str, text: &str, min: u64) -> Result<u64, LoadSpecError> {
    let bytes = parse_size(text).map_err(|e| err(item, e))?;
    if bytes < min {
        return Err(err(
            item,
            format!("{text} is too small; the least is {}", format_size(min)),
        ));
    }
    Ok(bytes)
}
