//! A trace-cmd recording (trace.dat) as a [`Source`]: each binary record decoded straight into
//! the [`Event`] and [`Kind`] the text path builds from a line, by the file's own formats, so
//! every pass over a trace reads a trace.dat as it reads the `trace-cmd report` text of it —
//! without formatting and parsing text.
//!
//! The task a record's pid names comes from the recording's saved task names (`<idle>` for 0,
//! `<...>` when it has none), as trace-cmd shows it.

mod pages;
mod plan;
mod render;
pub mod tracer;

use std::io;

use tracedat::{Item as DatItem, ReadAt, TraceDat};

use crate::line::{Event, Flags};
use crate::reader::{MAX_MARKERS, ReadStats};
use crate::source::{Item, Source};

use plan::{Ctx, Plan};

/// `common_flags` bits (the kernel's `trace_flag_type`).
const IRQS_OFF: u8 = 0x01;
const NEED_RESCHED: u8 = 0x04;
const HARDIRQ: u8 = 0x08;
const SOFTIRQ: u8 = 0x10;
const PREEMPT_RESCHED: u8 = 0x20;
const NMI: u8 = 0x40;
const BH_OFF: u8 = 0x80;

/// The common fields every record starts with.
struct Common {
    flags: Option<tracedat::Field>,
    preempt: Option<tracedat::Field>,
    pid: tracedat::Field,
}

impl Common {
    /// The context flags of record `d`.
    #[inline]
    fn flags(&self, d: &[u8], endian: tracedat::Endian) -> Option<Flags> {
        let f = self.flags.as_ref()?.uint(d, endian)? as u8;
        let preempt = self
            .preempt
            .as_ref()
            .and_then(|p| p.uint(d, endian))
            .unwrap_or(0);
        Some(Flags {
            irqs_off: f & IRQS_OFF != 0,
            bh_off: f & BH_OFF != 0,
            need_resched: f & (NEED_RESCHED | PREEMPT_RESCHED) != 0,
            hardirq: f & HARDIRQ != 0,
            softirq: f & SOFTIRQ != 0,
            nmi: f & NMI != 0,
            preempt_depth: (preempt & 0x0f) as u8,
        })
    }
}

/// A lost-events marker counted.
fn lost(s: &mut ReadStats, cpu: u32, count: Option<u64>) {
    s.lost_markers += 1;
    match count {
        Some(n) => s.lost_counted = s.lost_counted.saturating_add(n),
        None => s.lost_uncounted = true,
    }
    if s.lost.len() < MAX_MARKERS {
        s.lost.push((s.lines, Some(cpu), count));
    }
}

/// A recording's events, decoded.
pub struct Dat<'t, R> {
    events: tracedat::Events<'t, R>,
    dec: Decoder<'t, R>,
}

/// What decodes the records into events (on the thread that runs the pass; the stream of
/// records is read on another, [`pages`]).
struct Decoder<'t, R> {
    dat: &'t TraceDat<R>,
    /// Formats and plans by id (ids are 16 bits in a record).
    plans: Vec<Option<(&'t tracedat::EventFormat, Plan)>>,
    common: Option<Common>,
    ctx: Ctx<'t>,
    /// Per CPU, the last pid named and its name (consecutive records share a task).
    names: Vec<(u32, &'t str)>,
    stats: ReadStats,
    keep_lines: bool,
    /// Whether rendered lines give nanoseconds (`trace-cmd report -t`) rather than the
    /// kernel's microseconds.
    ns_lines: bool,
    line: String,
}

impl<'t, R: ReadAt> Dat<'t, R> {
    /// The events of `dat`'s buffers, the top instance's and the named ones', merged in time
    /// order.
    pub fn new(dat: &'t TraceDat<R>) -> Dat<'t, R> {
        let mut plans: Vec<Option<(&tracedat::EventFormat, Plan)>> = Vec::new();
        for f in dat.formats.all() {
            let Ok(id) = usize::try_from(f.id) else {
                continue;
            };
            if id > usize::from(u16::MAX) {
                continue;
            }
            if plans.len() <= id {
                plans.resize_with(id + 1, || None);
            }
            plans[id] = Some((f, plan::plan(f)));
        }
        let common = dat.formats.all().iter().find_map(|f| {
            Some(Common {
                flags: f.field("common_flags").cloned(),
                preempt: f.field("common_preempt_count").cloned(),
                pid: f.field("common_pid")?.clone(),
            })
        });
        let dec = Decoder {
            dat,
            plans,
            common,
            ctx: Ctx::new(dat),
            names: Vec::new(),
            stats: ReadStats::default(),
            keep_lines: false,
            ns_lines: false,
            line: String::new(),
        };
        Dat {
            events: dat.events_merged(),
            dec,
        }
    }

    /// Lines rendered with nanosecond timestamps (read back without losing the records'
    /// precision).
    pub fn ns_lines(&mut self, yes: bool) {
        self.dec.ns_lines = yes;
    }

    /// What the recording's reader met (pages, damage, losses).
    pub fn report(&self) -> &tracedat::ReadReport {
        self.events.report()
    }

    /// The reader's report into the stats: damage as unreadable parts, named; events the
    /// buffers dropped (the recorder's statistics) as losses.
    fn settle(&mut self) {
        let stats = &mut self.dec.stats;
        for (cpu, n) in self.dec.dat.options.dropped_events() {
            lost(stats, cpu, Some(n));
        }
        let r = self.events.report();
        stats.malformed = r.damaged_pages + r.damaged_chunks;
        let mut parts = Vec::new();
        if r.damaged_pages > 0 {
            parts.push(format!("{} damaged pages skipped", r.damaged_pages));
        }
        if r.damaged_chunks > 0 {
            parts.push(format!(
                "{} compressed chunks that did not decompress skipped",
                r.damaged_chunks
            ));
        }
        if !r.truncated_cpus.is_empty() {
            let cpus: Vec<String> = r.truncated_cpus.iter().map(u32::to_string).collect();
            parts.push(format!(
                "the file ends inside the data of CPU {}",
                cpus.join(", ")
            ));
        }
        if let Some(first) = &r.first_damage {
            parts.push(format!("first: {first}"));
        }
        stats.damage = (!parts.is_empty()).then(|| parts.join("; "));
    }
}

impl<R: ReadAt> Source for Dat<'_, R> {
    /// The records are read on a second thread ([`pages`]) and decoded here.
    fn each(&mut self, visit: &mut dyn FnMut(Item<'_>)) -> io::Result<()> {
        let dec = &mut self.dec;
        pages::each(&mut self.events, &mut |record| visit(dec.item(record)));
        self.settle();
        Ok(())
    }

    fn stats(&self) -> &ReadStats {
        &self.dec.stats
    }

    fn keep_lines(&mut self, yes: bool) {
        self.dec.keep_lines = yes;
    }
}

impl<R> Decoder<'_, R> {
    /// One item of the stream, decoded.
    #[inline]
    fn item<'s>(&'s mut self, item: DatItem<'s>) -> Item<'s> {
        self.stats.lines += 1;
        let r = match item {
            DatItem::Lost { cpu, count, .. } => {
                lost(&mut self.stats, cpu, count);
                return Item::Lost {
                    cpu: Some(cpu),
                    events: count,
                };
            }
            DatItem::Event(r) => r,
        };
        let endian = self.dat.endian;
        let (Some(common), Some(id)) = (&self.common, endian.uint(r.data, 2)) else {
            self.stats.malformed += 1;
            return Item::Other;
        };
        let Some(Some((format, plan))) = self.plans.get(id as usize) else {
            self.stats.malformed += 1;
            return Item::Other;
        };
        self.stats.events += 1;
        let pid = common
            .pid
            .int(r.data, endian)
            .and_then(|p| u32::try_from(p).ok())
            .unwrap_or(0);
        let flags = common.flags(r.data, endian);
        let task = task_name(&mut self.names, self.dat, r.cpu, pid);
        let kind = plan::decode(plan, r.data, &self.ctx);
        let mut event = Event {
            task,
            pid,
            cpu: r.cpu,
            flags,
            ts_ns: r.ts,
            ts_digits: 9,
            name: &format.name,
            fields: "",
            line: "",
        };
        if self.keep_lines {
            let start = render::line(
                &mut self.line,
                &event,
                kind.as_ref(),
                format,
                (r.data, endian),
                self.ns_lines,
            );
            event.line = &self.line;
            event.fields = &self.line[start..];
        }
        Item::Event(event, Some(kind.unwrap_or(crate::event::Kind::Other)))
    }
}

/// The name of `pid` on `cpu`: the cached one when the CPU's last record had the same pid.
#[inline]
fn task_name<'t, R>(
    names: &mut Vec<(u32, &'t str)>,
    dat: &'t TraceDat<R>,
    cpu: u32,
    pid: u32,
) -> &'t str {
    let c = cpu as usize;
    if names.len() <= c {
        names.resize(c + 1, (u32::MAX, ""));
    }
    if names[c].0 != pid {
        let name = match pid {
            0 => "<idle>",
            p => dat.comms.get(p).unwrap_or("<...>"),
        };
        names[c] = (pid, name);
    }
    names[c].1
}
