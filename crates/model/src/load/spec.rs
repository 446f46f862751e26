//! The load spec language: `cpu:60%,timer-storm:200,messaging:4x10,io:64M@2-3,cmd:"make -j8"`.
//!
//! A spec is a comma-separated list of generators, each `NAME[:ARG...][@CPULIST]`. Arguments
//! are positional where the order is natural (`memory:SIZE[:WORKERS]`) and recognised by form
//! where it is not (`messaging:4x10:pipe:process`). A CPU list after `@` may itself contain
//! commas (`cpu:100%@0-1,3`): a comma followed by a digit continues the list, since no
//! generator name starts with one. `cmd` takes the rest of its item as a command line; quote it
//! (`cmd:"a, b"`) when it contains a comma or `@`.
//!
//! This module parses and prints specs; it does not check CPUs against the machine (that is
//! [`LoadSpec::check_cpus`], called with what the kernel reports) and it starts nothing.

mod args;

use std::fmt;

use crate::CpuSet;
use args::parse_kind;

/// A parsed load spec: the generators to run together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadSpec {
    /// The generators, in the order written.
    pub generators: Vec<GeneratorSpec>,
}

/// One generator with its placement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneratorSpec {
    /// What it does.
    pub kind: GeneratorKind,
    /// `@CPULIST`: the CPUs its tasks may run on (`None`: the global `--load-cpus`, or every
    /// online CPU).
    pub cpus: Option<CpuSet>,
}

/// What a generator does, with its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GeneratorKind {
    /// One worker per CPU, busy `percent` % of the time in short slices.
    Cpu {
        /// Duty cycle, 1 to 100.
        percent: u8,
    },
    /// Ordinary threads sleeping a random 0-1 ms over and over.
    TimerStorm {
        /// Number of sleeping threads.
        threads: u32,
    },
    /// hackbench-like groups of senders and receivers.
    Messaging {
        /// Groups.
        groups: u32,
        /// Senders (and as many receivers) per group.
        fds: u32,
        /// Socket pair or pipe.
        transport: Transport,
        /// Threads or processes.
        tasks: TaskKind,
    },
    /// Streaming copies over a buffer larger than the last-level cache, and a page-fault storm.
    Memory {
        /// Buffer per worker in bytes; `None`: four times the last-level cache, at least 64 MiB.
        bytes: Option<u64>,
        /// Workers.
        workers: u32,
    },
    /// Writes and fsyncs in a private temporary directory.
    Io {
        /// Most bytes on disk at any time, per worker.
        bytes: u64,
        /// Workers.
        workers: u32,
    },
    /// TCP and/or UDP traffic over loopback.
    Net {
        /// Which protocols.
        protocols: Protocols,
        /// Connections (flows) per protocol.
        flows: u32,
    },
    /// Processes forking, executing a trivial program and exiting.
    Fork {
        /// Workers, each keeping one child in flight.
        workers: u32,
    },
    /// An external command line, run by `/bin/sh -c` in its own process group.
    Cmd {
        /// The command line.
        command: String,
    },
}

/// How messaging tasks talk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// UNIX stream socket pairs (hackbench's default).
    Socket,
    /// Pipes.
    Pipe,
}

/// Whether messaging tasks are threads of rtlab or processes of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskKind {
    /// Threads.
    Thread,
    /// Forked processes.
    Process,
}

/// Which loopback protocols `net` drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocols {
    /// TCP streams only.
    Tcp,
    /// UDP datagrams only.
    Udp,
    /// Both.
    Both,
}

/// Defaults and limits, shared by the parser, the help text and the generators.
pub mod defaults {
    /// `timer-storm` threads when no count is given.
    pub const TIMER_STORM_THREADS: u32 = 200;
    /// `messaging` groups when not given.
    pub const MESSAGING_GROUPS: u32 = 4;
    /// `messaging` senders per group when not given.
    pub const MESSAGING_FDS: u32 = 10;
    /// `io` bytes on disk per worker when not given.
    pub const IO_BYTES: u64 = 64 << 20;
    /// The smallest `io` cap.
    pub const IO_MIN_BYTES: u64 = 1 << 20;
    /// The smallest `memory` buffer.
    pub const MEMORY_MIN_BYTES: u64 = 1 << 20;
    /// Most threads or processes one generator may ask for.
    pub const MAX_TASKS: u32 = 10_000;
}

/// A spec that cannot be run, with the offending text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("load spec '{item}': {reason}")]
pub struct LoadSpecError {
    /// The generator item (or the whole spec) at fault.
    pub item: String,
    /// What is wrong and how to write it.
    pub reason: String,
}

const NAMES: &str = "cpu, timer-storm, messaging, memory, io, net, fork, cmd";

fn err(item: &str, reason: impl Into<String>) -> LoadSpecError {
    LoadSpecError {
        item: item.to_string(),
        reason: reason.into(),
    }
}

impl LoadSpec {
    /// Parses a spec.
    pub fn parse(text: &str) -> Result<LoadSpec, LoadSpecError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(err(text, format!("empty; name at least one of {NAMES}")));
        }
        let generators = split_items(text)?
            .into_iter()
            .map(|item| GeneratorSpec::parse(&item))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LoadSpec { generators })
    }

    /// Checks every `@CPULIST` against the online CPUs.
    pub fn check_cpus(&self, online: &CpuSet) -> Result<(), LoadSpecError> {
        for g in &self.generators {
            if let Some(cpus) = &g.cpus {
                let offline = cpus.difference(online);
                if !offline.is_empty() {
                    return Err(err(
                        &g.to_string(),
                        format!("CPU {offline} is not online (online: {online})"),
                    ));
                }
            }
        }
        Ok(())
    }
}

impl fmt::Display for LoadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, g) in self.generators.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{g}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for LoadSpec {
    type Err = LoadSpecError;
    fn from_str(s: &str) -> Result<LoadSpec, LoadSpecError> {
        LoadSpec::parse(s)
    }
}

/// Splits a spec at the commas that separate generators: not inside quotes, and not a comma
/// inside an `@` CPU list (one followed by a digit).
fn split_items(text: &str) -> Result<Vec<String>, LoadSpecError> {
    let mut items = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut in_cpus = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '@') => in_cpus = true,
            (None, ',') => {
                let continues_cpus = in_cpus && chars.peek().is_some_and(char::is_ascii_digit);
                if !continues_cpus {
                    items.push(std::mem::take(&mut current));
                    in_cpus = false;
                    continue;
                }
            }
            _ => {}
        }
        current.push(c);
    }
    if quote.is_some() {
        return Err(err(text, "a quote is not closed"));
    }
    items.push(current);
    for item in &items {
        if item.trim().is_empty() {
            return Err(err(text, "an empty item between commas"));
        }
    }
    Ok(items.into_iter().map(|i| i.trim().to_string()).collect())
}

/// Index of the last `@` outside quotes.
fn placement_at(item: &str) -> Option<usize> {
    let mut quote = None;
    let mut at = None;
    for (i, c) in item.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '@') => at = Some(i),
            _ => {}
        }
    }
    at
}

impl GeneratorSpec {
    /// Parses one `NAME[:ARG...][@CPULIST]` item.
    pub fn parse(item: &str) -> Result<GeneratorSpec, LoadSpecError> {
        let (body, cpus) = match placement_at(item) {
            Some(at) => {
                let list = &item[at + 1..];
                let cpus = CpuSet::parse_list(list).map_err(|e| {
                    err(
                        item,
                        format!("bad CPU list '{list}' after '@': {e}; e.g. @0-3,6"),
                    )
                })?;
                if cpus.is_empty() {
                    return Err(err(item, "the CPU list after '@' is empty"));
                }
                (&item[..at], Some(cpus))
            }
            None => (item, None),
        };
        let (name, rest) = match body.split_once(':') {
            Some((n, r)) => (n, Some(r)),
            None => (body, None),
        };
        let kind = match name {
            "cmd" => {
                let command = unquote(rest.unwrap_or("")).trim().to_string();
                if command.is_empty() {
                    return Err(err(item, "give the command: cmd:\"stress-ng --cpu 2\""));
                }
                GeneratorKind::Cmd { command }
            }
            _ => {
                let args: Vec<&str> = match rest {
                    Some(r) => r.split(':').collect(),
                    None => Vec::new(),
                };
                if args.iter().any(|a| a.is_empty()) {
                    return Err(err(item, "an empty argument between ':'"));
                }
                parse_kind(item, name, &args)?
            }
        };
        Ok(GeneratorSpec { kind, cpus })
    }
}

fn unquote(text: &str) -> &str {
    let t = text.trim();
    for q in ['"', '\''] {
        if t.len() >= 2 && t.starts_with(q) && t.ends_with(q) {
            return &t[1..t.len() - 1];
        }
    }
    t
}

/// How a `cmd` generator prints: the first of `cmd:"COMMAND"`, `cmd:'COMMAND'` and
/// `cmd:COMMAND` (each with the placement after it) that reads back as the same generator, since
/// a command may hold quotes, commas and `@` of its own; the first when none does.
fn cmd_text(command: &str, cpus: Option<&CpuSet>) -> String {
    let at = cpus.map(|c| format!("@{c}")).unwrap_or_default();
    let forms = [
        format!("cmd:\"{command}\"{at}"),
        format!("cmd:'{command}'{at}"),
        format!("cmd:{command}{at}"),
    ];
    let reads_back = |text: &&String| {
        let one_item = matches!(split_items(text).as_deref(), Ok([item]) if item == *text);
        one_item
            && GeneratorSpec::parse(text).is_ok_and(|g| {
                g.cpus.as_ref() == cpus
                    && matches!(&g.kind, GeneratorKind::Cmd { command: c } if c == command)
            })
    };
    let [first, ..] = &forms;
    forms.iter().find(reads_back).unwrap_or(first).clone()
}

/// Parses a size with a binary unit: `512K`, `64M`, `1G` (also `KiB`, `MiB`, `GiB`).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    if digits.is_empty() {
        return Err(format!("'{text}' is not a size; write e.g. 64M"));
    }
    let shift = match unit {
        "" => {
            return Err(format!(
                "size '{text}' has no unit; write {digits}K, {digits}M or {digits}G (powers of 1024)"
            ));
        }
        "K" | "k" | "KiB" => 10,
        "M" | "MiB" => 20,
        "G" | "GiB" => 30,
        "T" | "TiB" => 40,
        "B" => 0,
        _ => {
            return Err(format!(
                "unknown size unit '{unit}' in '{text}'; use K, M or G (powers of 1024)"
            ));
        }
    };
    let value: u64 = digits
        .parse()
        .map_err(|_| format!("size '{text}' is too large"))?;
    value
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("size '{text}' is too large"))
}

/// Prints a byte count in the largest binary unit that divides it (`64M`, `1536K`, `100B`).
pub fn format_size(bytes: u64) -> String {
    for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{bytes}B")
}

/// An amount of bytes, rounded, in the largest binary unit it reaches (`1.5 KiB`,
/// `200.0 GiB`, `512 B`): for messages about sizes that need not parse back.
pub fn format_bytes(bytes: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < units.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{value:.0} B")
    } else {
        format!("{value:.1} {}", units[unit])
    }
}

impl fmt::Display for GeneratorSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let GeneratorKind::Cmd { command } = &self.kind {
            // The placement is part of how the command must be quoted.
            return f.write_str(&cmd_text(command, self.cpus.as_ref()));
        }
        write!(f, "{}", self.kind)?;
        if let Some(cpus) = &self.cpus {
            write!(f, "@{cpus}")?;
        }
        Ok(())
    }
}

impl GeneratorKind {
    /// The generator's name as written in a spec.
    pub fn name(&self) -> &'static str {
        match self {
            GeneratorKind::Cpu { .. } => "cpu",
            GeneratorKind::TimerStorm { .. } => "timer-storm",
            GeneratorKind::Messaging { .. } => "messaging",
            GeneratorKind::Memory { .. } => "memory",
            GeneratorKind::Io { .. } => "io",
            GeneratorKind::Net { .. } => "net",
            GeneratorKind::Fork { .. } => "fork",
            GeneratorKind::Cmd { .. } => "cmd",
        }
    }
}

impl fmt::Display for GeneratorKind {
    /// The canonical spec text, every argument spelled out (parses back to the same value).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name();
        match self {
            GeneratorKind::Cpu { percent } => write!(f, "{name}:{percent}%"),
            GeneratorKind::TimerStorm { threads } => write!(f, "{name}:{threads}"),
            GeneratorKind::Messaging {
                groups,
                fds,
                transport,
                tasks,
            } => {
                let t = match transport {
                    Transport::Socket => "socket",
                    Transport::Pipe => "pipe",
                };
                let k = match tasks {
                    TaskKind::Thread => "thread",
                    TaskKind::Process => "process",
                };
                write!(f, "{name}:{groups}x{fds}:{t}:{k}")
            }
            GeneratorKind::Memory { bytes, workers } => match bytes {
                Some(b) => write!(f, "{name}:{}:{workers}", format_size(*b)),
                None if *workers == 1 => write!(f, "{name}"),
                None => write!(f, "{name}:auto:{workers}"),
            },
            GeneratorKind::Io { bytes, workers } => {
                write!(f, "{name}:{}:{workers}", format_size(*bytes))
            }
            GeneratorKind::Net { protocols, flows } => match protocols {
                Protocols::Tcp => write!(f, "{name}:tcp:{flows}"),
                Protocols::Udp => write!(f, "{name}:udp:{flows}"),
                Protocols::Both => write!(f, "{name}:{flows}"),
            },
            GeneratorKind::Fork { workers } => write!(f, "{name}:{workers}"),
            GeneratorKind::Cmd { command } => f.write_str(&cmd_text(command, None)),
        }
    }
}

#[cfg(test)]
mod tests;
