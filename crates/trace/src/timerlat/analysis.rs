//! The timerlat auto-analysis (what `rtla timerlat -a` prints, after the kernel's
//! `tools/tracing/rtla/src/timerlat_aa.c`) as a streaming analyser over the tracer's trace:
//! each CPU's activations are followed from the timer's IRQ sample to its thread sample, and
//! the osnoise noise events between them say what the latency was made of — the IRQ handler's
//! delay (and whether it was the way out of an idle state), the timerlat IRQ's own duration,
//! the thread that was running when the timer fired (the blocking thread) and the IRQs,
//! softirqs, NMIs and other threads that ran before the timerlat thread. The result is
//! [`model::timerlat::Analysis`]; the words about it are `report`'s.
//!
//! It owns the per-CPU state machine and nothing else: it reads [`Record`]s in trace order
//! (`trace_pipe` interleaves CPUs; each CPU's records stay in order), touches no file and
//! keeps no clock. Per record it does a map look-up and a few additions; names and stack
//! frames are copied into buffers reused from one activation to the next, and an
//! [`Analysis`] is built only when asked ([`Analyser::worst`], [`Analyser::last`]). Memory is
//! bounded: two activations per CPU, each interference list capped at
//! [`MAX_INTERFERENCES`] (the rest summed into one entry named [`OTHERS`]), stacks at
//! [`MAX_STACK_FRAMES`], names at [`MAX_NAME`] bytes, CPUs at [`model::cpuset::MAX_CPU`].
//!
//! Per CPU the state is *waiting for the IRQ* (between activations) or *waiting for the
//! thread* (after the IRQ sample):
//!
//! - an IRQ sample (`context irq`) starts an activation: its time and latency, and the task
//!   of the entry — what was running when the timer fired, the blocking-thread candidate (pid
//!   0: the CPU was idle). `expected start = sample time - IRQ latency`, the timer's expiry.
//! - `irq_noise` while waiting for the IRQ is remembered as the previous IRQ; it is reported
//!   when it was still running at the expiry (its end, the event's time, after the expected
//!   start): it may have delayed the timer's handler.
//! - the first `irq_noise` after the IRQ sample is the timerlat IRQ itself (the kernel writes
//!   the event at the IRQ's exit): its start gives the handler delay (`start - expected
//!   start`, 0 when negative: the two come from different clocks) and its duration the
//!   timerlat IRQ duration. The delay is an exit from idle when the CPU was idle and no
//!   previous IRQ was running at the expiry. Until that event comes (a trace of samples only,
//!   a stop inside the IRQ) the IRQ latency stands for the delay: it is expiry to the handler.
//! - later `irq_noise`, `softirq_noise`, `nmi_noise`: IRQ, softirq, NMI interference.
//! - `thread_noise` of the blocking candidate's pid, the first time: how long it ran on after
//!   the IRQ (the kernel restarts its noise window in the timerlat IRQ, so the duration counts
//!   from there). Other threads are thread interference, except the measuring threads
//!   themselves (`timerlat/N`, `timerlatu/N`): the kernel leaves its own thread out of thread
//!   noise, and a user-space measuring thread finishing its previous cycle is the
//!   measurement, not something competing with it, so they are counted nowhere.
//! - the thread sample (`context thread`) of the same activation ends it (thread latency);
//!   a thread sample of another activation, or an IRQ sample while waiting for the thread,
//!   drops the unfinished one. `user-ret` samples are not analysed.
//! - `<stack trace>` and its ` => func` lines: the stack the kernel saved in the timer's IRQ,
//!   printed after the thread sample (with `osnoise/print_stack`) or after the IRQ sample
//!   when the tracer stopped there; it belongs to the activation just sampled on its CPU.
//! - lost events on a CPU (or on an unnamed CPU: every CPU) drop its unfinished activation:
//!   one split by a loss cannot be told honestly.

use std::collections::BTreeMap;

use model::cpuset::MAX_CPU;
use model::timerlat::{
    Analysis, Blocking, Context, Interference, MAX_ANALYSES, MAX_INTERFERENCES, MAX_STACK_FRAMES,
};

use super::stream::{Noise, NoiseKind, Record, Sample};

/// Longest name kept (an IRQ's description, a softirq's or thread's name, a stack frame), in
/// bytes; a longer one is cut at a character boundary.
pub const MAX_NAME: usize = 64;

/// The name of the entry an interference list's overflow is summed into.
pub const OTHERS: &str = "(others)";

/// The streaming auto-analysis of a timerlat trace: feed it every record, ask it for each
/// CPU's worst activation or the last one.
#[derive(Debug, Default)]
pub struct Analyser {
    cpus: BTreeMap<u32, Cpu>,
    /// The CPU of the `<stack trace>` whose frames are being read.
    stack_cpu: Option<u32>,
}

impl Analyser {
    /// An analyser that has seen nothing.
    pub fn new() -> Analyser {
        Analyser::default()
    }

    /// Takes the next record of the trace.
    pub fn feed(&mut self, record: &Record<'_>) {
        match *record {
            Record::Frame(f) => {
                if let Some(cpu) = self.stack_cpu.and_then(|c| self.cpus.get_mut(&c)) {
                    cpu.frame(f);
                }
            }
            Record::Sample(s) => {
                self.stack_cpu = None;
                if let Some(cpu) = self.cpu(s.cpu) {
                    cpu.sample(&s);
                }
            }
            Record::Noise(n) => {
                self.stack_cpu = None;
                if let Some(cpu) = self.cpu(n.cpu) {
                    cpu.noise(&n);
                }
            }
            Record::Stack { cpu, .. } => {
                self.stack_cpu = self.cpu(cpu).map(|c| {
                    c.start_stack();
                    cpu
                });
            }
            Record::Lost { cpu, .. } => {
                self.stack_cpu = None;
                match cpu {
                    Some(c) => self.cpus.get_mut(&c).into_iter().for_each(Cpu::lost),
                    None => self.cpus.values_mut().for_each(Cpu::lost),
                }
            }
            Record::Other | Record::Malformed => {}
        }
    }

    /// Each CPU's worst activation analysed — by thread latency, or by IRQ latency for an
    /// activation the trace ended in before its thread ran (a stop at the IRQ) — worst
    /// first, at most [`MAX_ANALYSES`].
    pub fn worst(&self) -> Vec<Analysis> {
        let mut out: Vec<Analysis> = self
            .cpus
            .iter()
            .filter_map(|(&cpu, c)| c.worst(cpu))
            .collect();
        out.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.cpu.cmp(&b.cpu)));
        out.truncate(MAX_ANALYSES);
        out
    }

    /// The analysis of the last activation seen on `cpu` (the one a stop ended on): of its
    /// IRQ latency when its thread sample has not come; `None` when the CPU has none (or lost
    /// events since).
    pub fn last(&self, cpu: u32) -> Option<Analysis> {
        let c = self.cpus.get(&cpu)?;
        c.current().map(|a| a.analysis(cpu, a.context()))
    }

    /// The CPUs seen, ascending.
    pub fn cpus(&self) -> impl Iterator<Item = u32> + '_ {
        self.cpus.keys().copied()
    }

    /// The state of `cpu`, made on first sight; `None` beyond [`MAX_CPU`].
    fn cpu(&mut self, cpu: u32) -> Option<&mut Cpu> {
        (cpu <= MAX_CPU).then(|| self.cpus.entry(cpu).or_default())
    }
}

/// One CPU's state machine. Two activation slots: the one being followed and the worst
/// finished so far (the same slot while the worst is the latest), so the worst is kept
/// without copying and a new activation reuses the other slot's buffers.
#[derive(Debug, Default)]
struct Cpu {
    /// After the IRQ sample, before the thread sample.
    waiting_thread: bool,
    /// The last IRQ that ran while waiting for the timer's.
    previous: PreviousIrq,
    slots: [Activation; 2],
    /// The slot of the activation being followed (or last finished).
    cur: usize,
    /// Whether `slots[cur]` holds an activation (none yet, or dropped by a loss).
    cur_valid: bool,
    /// The slot of the worst finished activation.
    worst: Option<usize>,
}

impl Cpu {
    fn sample(&mut self, s: &Sample<'_>) {
        match s.context {
            Context::Irq => self.irq_sample(s),
            Context::Thread => self.thread_sample(s),
            Context::User => {}
        }
    }

    fn irq_sample(&mut self, s: &Sample<'_>) {
        if self.worst == Some(self.cur) {
            self.cur ^= 1;
        }
        let previous = &self.previous;
        self.slots[self.cur].start(s, previous);
        self.previous.seen = false;
        self.cur_valid = true;
        self.waiting_thread = true;
    }

    fn thread_sample(&mut self, s: &Sample<'_>) {
        let cur = self.cur;
        if !self.waiting_thread || !self.cur_valid || self.slots[cur].activation != s.activation {
            self.lost();
            return;
        }
        self.waiting_thread = false;
        self.slots[cur].thread_latency_ns = Some(s.latency_ns);
        // `worst` is never `cur` here: the IRQ sample took the other slot.
        let worse = self
            .worst
            .is_none_or(|w| s.latency_ns > self.slots[w].thread_latency_ns.unwrap_or(0));
        if worse {
            self.worst = Some(cur);
        }
    }

    fn noise(&mut self, n: &Noise<'_>) {
        if !self.waiting_thread {
            if n.kind == NoiseKind::Irq {
                self.previous.set(n);
            }
            return;
        }
        let a = &mut self.slots[self.cur];
        match n.kind {
            NoiseKind::Irq if a.timer_irq.is_none() => a.timer_irq(n),
            NoiseKind::Irq => a.irqs.push(n.name, n.id, n.duration_ns),
            NoiseKind::Softirq => a.softirqs.push(n.name, n.id, n.duration_ns),
            NoiseKind::Nmi => a.nmi_ns = a.nmi_ns.saturating_add(n.duration_ns),
            NoiseKind::Thread => a.thread_noise(n),
        }
    }

    fn start_stack(&mut self) {
        if self.cur_valid {
            self.slots[self.cur].stack.clear();
        }
    }

    fn frame(&mut self, f: &str) {
        if self.cur_valid {
            self.slots[self.cur].stack.push(f);
        }
    }

    /// Events were lost: the unfinished activation (if any) cannot be told.
    fn lost(&mut self) {
        self.waiting_thread = false;
        self.previous.seen = false;
        // A finished worst in this slot stays (the next IRQ sample takes the other slot), but
        // no later stack may join it.
        self.cur_valid = false;
    }

    /// The activation followed (or last finished), if any.
    fn current(&self) -> Option<&Activation> {
        self.cur_valid.then(|| &self.slots[self.cur])
    }

    /// The worst finished activation, or the unfinished one when its IRQ latency is worse.
    fn worst(&self, cpu: u32) -> Option<Analysis> {
        let finished = self.worst.map(|w| &self.slots[w]);
        let pending = self
            .current()
            .filter(|a| self.waiting_thread && a.thread_latency_ns.is_none());
        let pick = match (finished, pending) {
            (Some(f), Some(p)) if p.total() > f.total() => p,
            (Some(f), _) => f,
            (None, Some(p)) => p,
            (None, None) => return None,
        };
        Some(pick.analysis(cpu, pick.context()))
    }
}

/// An IRQ seen while waiting for the timer's.
#[derive(Debug, Default)]
struct PreviousIrq {
    seen: bool,
    /// Its end: when the event was written (at the IRQ's exit).
    end_ns: u64,
    name: String,
    id: u64,
    duration_ns: u64,
}

impl PreviousIrq {
    fn set(&mut self, n: &Noise<'_>) {
        self.seen = true;
        self.end_ns = n.ts_ns.max(n.start_ns.saturating_add(n.duration_ns));
        put_name(&mut self.name, n.name);
        self.id = n.id;
        self.duration_ns = n.duration_ns;
    }
}

/// One activation's figures, filled in place.
#[derive(Debug, Default)]
struct Activation {
    activation: u64,
    irq_ts_ns: u64,
    irq_latency_ns: u64,
    thread_latency_ns: Option<u64>,
    /// The blocking candidate: what was running when the timer fired.
    pid: u32,
    comm: String,
    blocking_ns: Option<u64>,
    /// The timerlat IRQ's start and duration, once its `irq_noise` came.
    timer_irq: Option<(u64, u64)>,
    delay_ns: u64,
    exit_from_idle: bool,
    /// The IRQ that was running at the timer's expiry.
    previous: Option<Interference>,
    nmi_ns: u64,
    irqs: List,
    softirqs: List,
    threads: List,
    stack: Frames,
}

impl Activation {
    /// Starts it from its IRQ sample, with the IRQ that ran last before it.
    fn start(&mut self, s: &Sample<'_>, previous: &PreviousIrq) {
        self.activation = s.activation;
        self.irq_ts_ns = s.ts_ns;
        self.irq_latency_ns = s.latency_ns;
        self.thread_latency_ns = None;
        self.pid = s.pid;
        put_name(&mut self.comm, s.task);
        self.blocking_ns = None;
        self.timer_irq = None;
        self.nmi_ns = 0;
        self.irqs.clear();
        self.softirqs.clear();
        self.threads.clear();
        self.stack.clear();
        let expected = self.expected_start_ns();
        if previous.seen && previous.end_ns > expected {
            let p = self.previous.get_or_insert_with(|| Interference {
                name: String::new(),
                id: 0,
                duration_ns: 0,
                count: 0,
            });
            set(p, &previous.name, previous.id, previous.duration_ns);
        } else {
            self.previous = None;
        }
        // Until the timerlat IRQ's own event says when its handler started.
        self.delay_ns = s.latency_ns;
        self.exit_from_idle = self.pid == 0 && self.previous.is_none();
    }

    /// The timer's expiry on the trace clock.
    fn expected_start_ns(&self) -> u64 {
        self.irq_ts_ns.saturating_sub(self.irq_latency_ns)
    }

    fn timer_irq(&mut self, n: &Noise<'_>) {
        self.timer_irq = Some((n.start_ns, n.duration_ns));
        self.delay_ns = n.start_ns.saturating_sub(self.expected_start_ns());
    }

    fn thread_noise(&mut self, n: &Noise<'_>) {
        if self.pid != 0 && n.id == u64::from(self.pid) && self.blocking_ns.is_none() {
            self.blocking_ns = Some(n.duration_ns);
            put_name(&mut self.comm, n.name);
        } else if n.id != 0 && !is_measuring_thread(n.name) {
            // pid 0 is the idle task: the CPU had nothing to run, which is not interference.
            self.threads.push(n.name, n.id, n.duration_ns);
        }
    }

    /// Thread latency when finished, else the IRQ latency.
    fn context(&self) -> Context {
        if self.thread_latency_ns.is_some() {
            Context::Thread
        } else {
            Context::Irq
        }
    }

    fn total(&self) -> u64 {
        self.thread_latency_ns.unwrap_or(self.irq_latency_ns)
    }

    fn analysis(&self, cpu: u32, context: Context) -> Analysis {
        Analysis {
            cpu,
            activation: self.activation,
            context,
            total_ns: self.total(),
            at_ns: self.irq_ts_ns,
            irq_latency_ns: self.irq_latency_ns,
            irq_handler_delay_ns: self.delay_ns,
            exit_from_idle: self.exit_from_idle,
            previous_irq: self.previous.clone(),
            timerlat_irq_ns: self.timer_irq.map_or(0, |(_, d)| d),
            blocking: Some(Blocking {
                comm: self.comm.clone(),
                pid: self.pid,
                duration_ns: self.blocking_ns,
            }),
            stack: self.stack.as_slice().to_vec(),
            nmi_ns: self.nmi_ns,
            irqs: largest_first(self.irqs.as_slice()),
            softirqs: largest_first(self.softirqs.as_slice()),
            threads: largest_first(self.threads.as_slice()),
        }
    }
}

/// A list as shown: the longest first, `(others)` last.
fn largest_first(list: &[Interference]) -> Vec<Interference> {
    let mut out = list.to_vec();
    out.sort_by_key(|i| (i.name == OTHERS, std::cmp::Reverse(i.duration_ns)));
    out
}

/// Whether a thread is one of the tracer's measuring threads (`timerlat/3`, `timerlatu/3`).
fn is_measuring_thread(name: &str) -> bool {
    name.strip_prefix("timerlat/")
        .or_else(|| name.strip_prefix("timerlatu/"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// An interference list filled in place: entries past `len` keep their names' allocations
/// for the next activation. The same source again (name and id) adds to its entry and its
/// count. At most [`MAX_INTERFERENCES`] entries; past that the last one is [`OTHERS`], the
/// sum of the rest.
#[derive(Debug, Default)]
struct List {
    items: Vec<Interference>,
    len: usize,
    folded: bool,
}

impl List {
    fn clear(&mut self) {
        self.len = 0;
        self.folded = false;
    }

    fn push(&mut self, name: &str, id: u64, ns: u64) {
        let short = &name[..cut_at(name)];
        if let Some(same) = self.items[..self.len]
            .iter_mut()
            .find(|i| i.id == id && i.name == short)
        {
            same.duration_ns = same.duration_ns.saturating_add(ns);
            same.count = same.count.saturating_add(1);
            return;
        }
        if self.len == MAX_INTERFERENCES {
            let last = &mut self.items[self.len - 1];
            if !self.folded {
                self.folded = true;
                last.name.clear();
                last.name.push_str(OTHERS);
                last.id = 0;
            }
            last.duration_ns = last.duration_ns.saturating_add(ns);
            last.count = last.count.saturating_add(1);
            return;
        }
        if self.len == self.items.len() {
            self.items.push(Interference {
                name: String::new(),
                id: 0,
                duration_ns: 0,
                count: 0,
            });
        }
        set(&mut self.items[self.len], name, id, ns);
        self.len += 1;
    }

    fn as_slice(&self) -> &[Interference] {
        &self.items[..self.len]
    }
}

/// A stack's frames, filled in place, at most [`MAX_STACK_FRAMES`] (the outermost beyond
/// are dropped).
#[derive(Debug, Default)]
struct Frames {
    items: Vec<String>,
    len: usize,
}

impl Frames {
    fn clear(&mut self) {
        self.len = 0;
    }

    fn push(&mut self, frame: &str) {
        if self.len == MAX_STACK_FRAMES {
            return;
        }
        if self.len == self.items.len() {
            self.items.push(String::new());
        }
        put_name(&mut self.items[self.len], frame);
        self.len += 1;
    }

    fn as_slice(&self) -> &[String] {
        &self.items[..self.len]
    }
}

/// Fills an interference entry in place.
fn set(slot: &mut Interference, name: &str, id: u64, ns: u64) {
    put_name(&mut slot.name, name);
    slot.id = id;
    slot.duration_ns = ns;
    slot.count = 1;
}

/// `dst = src`, cut to [`MAX_NAME`] bytes at a character boundary, reusing `dst`'s buffer.
fn put_name(dst: &mut String, src: &str) {
    dst.clear();
    dst.push_str(&src[..cut_at(src)]);
}

/// Where a name is cut: [`MAX_NAME`] bytes, back to a character boundary.
fn cut_at(src: &str) -> usize {
    let mut cut = src.len().min(MAX_NAME);
    while !src.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

#[cfg(test)]
mod tests;
