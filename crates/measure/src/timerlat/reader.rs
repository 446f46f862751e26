//! What the timerlat engine makes of the tracer's trace as it arrives: bytes from the trace
//! pipe cut into lines, each line classified (`trace::timerlat::stream`), every activation's
//! IRQ, thread and user latency put into its CPU's exact figures (accumulator, histogram,
//! worst samples, per-second maxima), the auto-analysis fed, lost events counted, the stop at
//! the threshold noticed with the stack the kernel prints after it, and — with `--break` —
//! the last lines of each CPU kept as the trace of that moment.
//!
//! Only activations `1..=limit` count (the planned periods): the tracer runs a little past
//! the end while it is stopped, and those activations are not part of the run.

use std::collections::VecDeque;

use model::Nanos;
use model::histogram::Histogram;
use model::measure::{Series, Spike};
use model::stats::Accumulator;
use model::timerlat::{Context, MAX_STACK_FRAMES};
use trace::timerlat::analysis::Analyser;
use trace::timerlat::stream::{self, Record, Sample};

use crate::cell::CellSnapshot;

/// Lines of each CPU kept for the trace of a stop.
const WINDOW_LINES: usize = 256;
/// Longest line kept (a trace line is ~100 bytes; anything far longer is damage).
const MAX_LINE: usize = 4096;

/// One latency's figures on one CPU.
#[derive(Clone, Debug)]
pub(super) struct Figures {
    acc: Accumulator,
    histogram: Histogram,
    /// The worst samples, worst first, at most `keep`.
    spikes: Vec<Spike>,
    keep: usize,
    series: Series,
    max_slots: usize,
    tid: Option<u32>,
}

impl Figures {
    fn new(keep: u32, slot_ns: Nanos, max_slots: usize) -> Figures {
        Figures {
            acc: Accumulator::new(),
            histogram: Histogram::new(),
            spikes: Vec::with_capacity(keep as usize),
            keep: keep as usize,
            series: Series {
                slot_ns,
                ..Series::default()
            },
            max_slots: max_slots.max(1),
            tid: None,
        }
    }

    fn record(&mut self, latency_ns: u64, cycle: u64, at_ns: u64, ts_ns: u64) {
        self.acc.record(latency_ns);
        self.histogram.record(latency_ns);
        let slot = usize::try_from(at_ns / self.series.slot_ns.get().max(1))
            .unwrap_or(usize::MAX)
            .min(self.max_slots - 1);
        if self.series.max_ns.len() <= slot {
            self.series.max_ns.resize(slot + 1, 0);
            self.series.count.resize(slot + 1, 0);
        }
        self.series.max_ns[slot] = self.series.max_ns[slot].max(latency_ns);
        self.series.count[slot] += 1;
        let worse = self.spikes.len() < self.keep
            || self
                .spikes
                .last()
                .is_some_and(|s| latency_ns > s.latency_ns);
        if worse && self.keep > 0 {
            let spike = Spike {
                latency_ns,
                cycle,
                at_ns,
                monotonic_ns: ts_ns,
            };
            let at = self.spikes.partition_point(|s| s.latency_ns >= latency_ns);
            self.spikes.insert(at, spike);
            self.spikes.truncate(self.keep);
        }
    }

    /// The samples so far.
    pub(super) fn count(&self) -> u64 {
        self.acc.count
    }

    /// The figures as a cell snapshot (what the result document is built from).
    pub(super) fn snapshot(&self, cpu: u32) -> CellSnapshot {
        CellSnapshot {
            cpu,
            tid: self.tid,
            acc: self.acc,
            histogram: self.histogram.clone(),
            spikes: self.spikes.clone(),
            series: self.series.clone(),
            periods_done: self.acc.count,
            work: Default::default(),
        }
    }
}

/// The stop the tracer made at the threshold, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Stop {
    pub cpu: u32,
    pub context: Context,
    pub activation: u64,
    pub latency_ns: u64,
    pub stack: Vec<String>,
}

/// Everything read from the trace so far.
pub(super) struct Reader {
    /// The measured CPUs, ascending; the figures below are in this order.
    cpus: Vec<u32>,
    pub(super) thread: Vec<Figures>,
    pub(super) irq: Vec<Figures>,
    pub(super) user: Vec<Figures>,
    period_ns: u64,
    /// The last activation that counts.
    limit: u64,
    /// The threshold (us) at which the kernel stops; `None` without `--break`.
    stop_us: Option<u64>,
    pub(super) stop: Option<Stop>,
    /// The CPU of the stack being read (its frames follow its `<stack trace>` line).
    stack_cpu: Option<u32>,
    pub(super) analyser: Analyser,
    /// Events the ring buffer lost.
    pub(super) lost: u64,
    /// Lines that were not a trace line.
    pub(super) malformed: u64,
    /// With `--break`: each CPU's last lines.
    window: Option<Vec<VecDeque<String>>>,
    /// Bytes of a line not yet ended.
    pending: Vec<u8>,
}

impl Reader {
    /// A reader for `cpus`, counting activations up to `limit`.
    pub(super) fn new(
        cpus: Vec<u32>,
        period: Nanos,
        limit: u64,
        (spikes, slot, slots): (u32, Nanos, usize),
        stop_us: Option<u64>,
    ) -> Reader {
        let figures = || {
            cpus.iter()
                .map(|_| Figures::new(spikes, slot, slots))
                .collect::<Vec<_>>()
        };
        Reader {
            thread: figures(),
            irq: figures(),
            user: figures(),
            window: stop_us.map(|_| cpus.iter().map(|_| VecDeque::new()).collect()),
            cpus,
            period_ns: period.get(),
            limit,
            stop_us,
            stop: None,
            stack_cpu: None,
            analyser: Analyser::new(),
            lost: 0,
            malformed: 0,
            pending: Vec::new(),
        }
    }

    /// The measured CPUs, ascending.
    pub(super) fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    /// Reads what the pipe gave: every complete line; a partial one waits for its end.
    pub(super) fn feed(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        let mut start = 0;
        let pending = std::mem::take(&mut self.pending);
        while let Some(nl) = pending[start..].iter().position(|&b| b == b'\n') {
            let line = &pending[start..start + nl];
            start += nl + 1;
            match std::str::from_utf8(line) {
                Ok(text) if line.len() <= MAX_LINE => self.line(text),
                _ => self.malformed += 1,
            }
        }
        let rest = &pending[start..];
        if rest.len() > MAX_LINE {
            self.malformed += 1;
        } else {
            self.pending = rest.to_vec();
        }
    }

    /// Whether every CPU has its `limit` thread samples (a `--cycles` run is complete).
    pub(super) fn all_done(&self) -> bool {
        self.thread.iter().all(|f| f.count() >= self.limit)
    }

    fn index(&self, cpu: u32) -> Option<usize> {
        self.cpus.binary_search(&cpu).ok()
    }

    fn line(&mut self, text: &str) {
        let record = stream::record(text);
        self.analyser.feed(&record);
        match record {
            Record::Sample(s) => {
                self.sample(&s);
                self.keep_line(s.cpu, text);
            }
            Record::Noise(n) => self.keep_line(n.cpu, text),
            Record::Stack { cpu, .. } => {
                self.stack_cpu = Some(cpu);
                self.keep_line(cpu, text);
            }
            Record::Frame(f) => {
                if let Some(cpu) = self.stack_cpu {
                    self.keep_line(cpu, text);
                    if let Some(stop) = self.stop.as_mut().filter(|s| s.cpu == cpu)
                        && stop.stack.len() < MAX_STACK_FRAMES
                    {
                        stop.stack.push(f.chars().take(128).collect());
                    }
                }
            }
            Record::Lost { events, .. } => {
                self.lost = self.lost.saturating_add(events.unwrap_or(1));
            }
            Record::Other => {}
            Record::Malformed => self.malformed += 1,
        }
        if !matches!(record, Record::Frame(_) | Record::Stack { .. }) {
            self.stack_cpu = None;
        }
    }

    fn sample(&mut self, s: &Sample<'_>) {
        let Some(i) = self.index(s.cpu) else { return };
        if s.activation == 0 || s.activation > self.limit || self.stop.is_some() {
            return;
        }
        let cycle = s.activation - 1;
        let at_ns = cycle.saturating_mul(self.period_ns);
        let figures = match s.context {
            Context::Irq => &mut self.irq[i],
            Context::Thread => &mut self.thread[i],
            Context::User => &mut self.user[i],
        };
        figures.record(s.latency_ns, cycle, at_ns, s.ts_ns);
        if s.context != Context::Irq {
            figures.tid.get_or_insert(s.pid);
        }
        // The kernel compares whole microseconds: latency / 1000 >= threshold.
        if let Some(us) = self.stop_us
            && s.context != Context::User
            && s.latency_ns / 1_000 >= us
        {
            self.stop = Some(Stop {
                cpu: s.cpu,
                context: s.context,
                activation: s.activation,
                latency_ns: s.latency_ns,
                stack: Vec::new(),
            });
        }
    }

    fn keep_line(&mut self, cpu: u32, text: &str) {
        let Some(i) = self.index(cpu) else { return };
        if let Some(window) = self.window.as_mut() {
            let lines = &mut window[i];
            if lines.len() == WINDOW_LINES {
                lines.pop_front();
            }
            lines.push_back(text.to_string());
        }
    }

    /// The trace of the stop: the stopped CPU's last lines, as the kernel printed them.
    pub(super) fn window(&self) -> String {
        let (Some(stop), Some(window)) = (&self.stop, &self.window) else {
            return String::new();
        };
        let Some(i) = self.index(stop.cpu) else {
            return String::new();
        };
        let mut text = String::new();
        for line in &window[i] {
            text.push_str(line);
            text.push('\n');
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(limit: u64, stop_us: Option<u64>) -> Reader {
        Reader::new(
            vec![1, 3],
            Nanos::MILLISECOND,
            limit,
            (4, Nanos::SECOND, 8),
            stop_us,
        )
    }

    fn sample(cpu: u32, id: u64, context: &str, ns: u64) -> String {
        let task = if context == "irq" {
            "<idle>-0"
        } else {
            "timerlat/1-77"
        };
        format!(
            "  {task}  [{cpu:03}] d.h1.  100.{:06}: #{id} context {context:>6} timer_latency {ns:9} ns\n",
            id * 1000
        )
    }

    #[test]
    fn samples_go_to_their_cpu_and_context_lines_may_arrive_cut() {
        let mut r = reader(100, None);
        let text = [
            sample(1, 1, "irq", 900),
            sample(1, 1, "thread", 4_000),
            sample(3, 1, "irq", 1_200),
            sample(3, 1, "thread", 9_000),
            sample(1, 2, "irq", 800),
            sample(1, 2, "thread", 3_000),
            sample(2, 1, "thread", 1), // not measured
        ]
        .concat();
        let (a, b) = text.as_bytes().split_at(70);
        r.feed(a);
        r.feed(b);
        assert_eq!(r.thread[0].count(), 2);
        assert_eq!(r.irq[1].count(), 1);
        let snap = r.thread[1].snapshot(3);
        assert_eq!((snap.acc.max_ns, snap.tid), (9_000, Some(77)));
        assert_eq!(r.thread[0].snapshot(1).spikes[0].latency_ns, 4_000);
        assert_eq!(r.thread[0].snapshot(1).spikes[1].cycle, 1);
        assert_eq!(r.malformed, 0);
    }

    #[test]
    fn activations_past_the_plan_do_not_count() {
        let mut r = reader(1, None);
        r.feed(sample(1, 1, "thread", 5).as_bytes());
        r.feed(sample(1, 2, "thread", 5).as_bytes());
        r.feed(sample(3, 1, "thread", 5).as_bytes());
        assert_eq!(r.thread[0].count(), 1);
        assert!(r.all_done());
    }

    #[test]
    fn the_stop_is_noticed_with_its_stack_and_window() {
        let mut r = reader(100, Some(50));
        r.feed(sample(1, 1, "irq", 900).as_bytes());
        r.feed(sample(1, 1, "thread", 49_999).as_bytes());
        assert!(r.stop.is_none(), "49.999 us is 49 whole us");
        r.feed(sample(1, 2, "irq", 900).as_bytes());
        r.feed(sample(1, 2, "thread", 50_000).as_bytes());
        r.feed(b"  timerlat/1-77  [001] ....  100.002001: <stack trace>\n => timerlat_irq\n => __hrtimer_run_queues\n");
        let stop = r.stop.clone().unwrap();
        assert_eq!(
            (stop.cpu, stop.context, stop.activation),
            (1, Context::Thread, 2)
        );
        assert_eq!(stop.stack, ["timerlat_irq", "__hrtimer_run_queues"]);
        assert!(r.window().contains("#2 context thread"));
        assert!(r.window().contains("=> timerlat_irq"));
    }

    #[test]
    fn losses_and_damage_are_counted() {
        let mut r = reader(100, None);
        r.feed(b"CPU:1 [LOST 12 EVENTS]\nnot a line\n\xff\xfe\n");
        assert_eq!((r.lost, r.malformed), (12, 2));
    }
}
