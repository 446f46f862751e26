//! Load threads: spawning them small, ordinary (SCHED_OTHER) and placed; the gate that holds
//! them until all are spawned; the stop flag they poll; and the shared counters they publish
//! into, CPU time included.
//!
//! The gate matters for big loads: a thousand timer-storm threads already storming would
//! leave the thread spawning the next one a thousandth of the CPU, and starting them would
//! take minutes instead of a fraction of a second.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, mpsc};
use std::thread::JoinHandle;

use model::CpuSet;
use model::measure::Policy;
use sys::sched::SchedParams;

use crate::generator::{Counters, LoadError};

/// Stack of a load thread unless the generator asks for another size.
pub const DEFAULT_STACK: usize = 256 * 1024;

/// How often (nanoseconds of wall time) a [`Meter`] publishes its thread's CPU time.
const PUBLISH_EVERY_NS: u64 = 20_000_000;

/// The stop flag and counters one generator's threads share.
#[derive(Debug, Default)]
pub struct Shared {
    stop: AtomicBool,
    ops: AtomicU64,
    bytes: AtomicU64,
    cpu_ns: AtomicU64,
    /// Open once every thread is spawned (or when stopping).
    gate: Mutex<bool>,
    opened: Condvar,
}

impl Shared {
    fn wait_at_gate(&self) {
        let mut open = self.gate.lock().unwrap_or_else(|e| e.into_inner());
        while !*open {
            open = self.opened.wait(open).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn open_gate(&self) {
        *self.gate.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.opened.notify_all();
    }

    /// Whether the threads should end.
    #[inline]
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Asks the threads to end.
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Counts `n` operations.
    #[inline]
    pub fn add_ops(&self, n: u64) {
        self.ops.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts `n` bytes.
    #[inline]
    pub fn add_bytes(&self, n: u64) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts CPU time used outside the threads (by reaped child processes).
    pub fn add_cpu_ns(&self, n: u64) {
        self.cpu_ns.fetch_add(n, Ordering::Relaxed);
    }

    /// The counters now.
    pub fn counters(&self) -> Counters {
        Counters {
            ops: self.ops.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            cpu_ns: self.cpu_ns.load(Ordering::Relaxed),
        }
    }
}

/// Counts what the calling thread does and publishes it into [`Shared`] every 20 ms of wall
/// time (and at the end): its CPU time, and the operations and bytes given to
/// [`count`](Meter::count). Threads doing hundreds of thousands of operations a second then
/// touch the shared cache line fifty times a second, not at every operation, and make no
/// system call for their CPU time until it is due.
#[derive(Debug)]
pub struct Meter {
    published_cpu: u64,
    next_publish: u64,
    ops: u64,
    bytes: u64,
}

impl Meter {
    /// A meter for the calling thread, starting from its CPU time now.
    pub fn start() -> Meter {
        Meter {
            published_cpu: sys::clock::thread_cpu_ns(),
            next_publish: sys::clock::monotonic_ns() + PUBLISH_EVERY_NS,
            ops: 0,
            bytes: 0,
        }
    }

    /// Counts `ops` operations and `bytes` bytes, published with the next [`tick`](Meter::tick)
    /// that is due.
    #[inline]
    pub fn count(&mut self, ops: u64, bytes: u64) {
        self.ops += ops;
        self.bytes += bytes;
    }

    /// Publishes if 20 ms passed since the last time. Costs one vDSO clock read when not due.
    #[inline]
    pub fn tick(&mut self, shared: &Shared) {
        let now = sys::clock::monotonic_ns();
        if now >= self.next_publish {
            self.next_publish = now + PUBLISH_EVERY_NS;
            self.publish(shared);
        }
    }

    /// Publishes the thread's CPU time and the counts now.
    pub fn publish(&mut self, shared: &Shared) {
        let cpu = sys::clock::thread_cpu_ns();
        shared.add_cpu_ns(cpu.saturating_sub(self.published_cpu));
        self.published_cpu = cpu;
        if self.ops > 0 {
            shared.add_ops(std::mem::take(&mut self.ops));
        }
        if self.bytes > 0 {
            shared.add_bytes(std::mem::take(&mut self.bytes));
        }
    }
}

/// A generator's threads: spawned placed and ordinary, stopped and joined together.
#[derive(Debug)]
pub struct Workers {
    generator: String,
    shared: Arc<Shared>,
    handles: Vec<JoinHandle<()>>,
    spawned: usize,
}

impl Workers {
    /// No threads yet; `generator` names the spec item in errors.
    pub fn new(generator: impl Into<String>) -> Workers {
        Workers {
            generator: generator.into(),
            shared: Arc::default(),
            handles: Vec::new(),
            spawned: 0,
        }
    }

    /// The shared flag and counters.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The counters so far (final once [`stop`](Workers::stop) returned).
    pub fn counters(&self) -> Counters {
        self.shared.counters()
    }

    /// Threads started (running, or stopped by [`stop`](Workers::stop)).
    pub fn len(&self) -> usize {
        self.spawned
    }

    /// Whether none was started.
    pub fn is_empty(&self) -> bool {
        self.spawned == 0
    }

    /// Whether threads are still running (started and not stopped).
    pub fn running(&self) -> bool {
        !self.handles.is_empty()
    }

    /// Spawns a thread named `name` (at most 15 bytes show in `ps`) with a `stack`-byte stack,
    /// SCHED_OTHER at nice 0, allowed on `cpus`, that runs `body` with a [`Meter`] (published
    /// once more when `body` returns) as soon as [`go`](Workers::go) is called. Returns when
    /// the thread is placed, or with why it could not be (the thread then never runs `body`).
    pub fn spawn(
        &mut self,
        name: &str,
        cpus: &CpuSet,
        stack: usize,
        body: impl FnOnce(&Shared, &mut Meter) + Send + 'static,
    ) -> Result<(), LoadError> {
        let shared = Arc::clone(&self.shared);
        let cpus = cpus.clone();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), sys::Error>>();
        let handle = std::thread::Builder::new()
            .name(name.chars().take(15).collect())
            .stack_size(stack)
            .spawn(move || {
                let placed =
                    sys::sched::set_current_thread_policy(&SchedParams::new(Policy::Other, 0))
                        .and_then(|()| sys::sched::pin_current_thread(&cpus));
                let ok = placed.is_ok();
                let _ = ready_tx.send(placed);
                if ok {
                    shared.wait_at_gate();
                    let mut meter = Meter::start();
                    body(&shared, &mut meter);
                    meter.publish(&shared);
                }
            })
            .map_err(|e| {
                LoadError::setup(
                    &self.generator,
                    format!(
                        "cannot start thread {} ({e}); lower the thread count or raise \
                         `ulimit -u`",
                        self.handles.len() + 1
                    ),
                )
            })?;
        let placed = ready_rx.recv().unwrap_or_else(|_| {
            Err(sys::Error::Unsupported {
                what: "load thread".into(),
                why: "it ended before it was placed".into(),
            })
        });
        self.handles.push(handle);
        self.spawned += 1;
        placed.map_err(|e| LoadError::sys(&self.generator, e))
    }

    /// Lets every thread spawned so far (and any spawned later) run its body.
    pub fn go(&self) {
        self.shared.open_gate();
    }

    /// Asks every thread to stop and waits for all of them; returns the final counters. Calling
    /// it again changes nothing.
    pub fn stop(&mut self) -> Counters {
        self.shared.request_stop();
        self.shared.open_gate();
        for handle in self.handles.drain(..) {
            let _ = handle.join();
        }
        self.shared.counters()
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A small, fast pseudo-random sequence (xorshift64*) for load decisions: sleep lengths,
/// access patterns. Not for anything that needs unpredictability.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A sequence from `seed` (any value; zero is remapped).
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `0..bound` (`bound` > 0), with negligible bias for small bounds.
    #[inline]
    pub fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn threads_are_placed_counted_and_stopped() {
        let mut workers = Workers::new("test");
        let cpus = CpuSet::from_cpus([0]);
        for i in 0..3 {
            workers
                .spawn(&format!("w{i}"), &cpus, DEFAULT_STACK, |shared, meter| {
                    assert_eq!(sys::sched::affinity().unwrap(), CpuSet::from_cpus([0]));
                    while !shared.stopping() {
                        meter.count(1, 10);
                        meter.tick(shared);
                        std::thread::sleep(Duration::from_millis(1));
                    }
                })
                .unwrap();
        }
        assert_eq!(workers.len(), 3);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(workers.counters().ops, 0, "held at the gate until go");
        workers.go();
        std::thread::sleep(Duration::from_millis(100));
        let live = workers.shared().counters();
        assert!(live.ops > 0);
        let done = workers.stop();
        assert!(!workers.running());
        assert_eq!(workers.len(), 3);
        assert_eq!(workers.stop(), done);
        assert!(done.ops >= live.ops);
        assert_eq!(done.bytes, done.ops * 10);
        assert!(done.cpu_ns > 0);
    }

    #[test]
    fn threads_never_let_through_the_gate_still_stop() {
        let mut workers = Workers::new("test");
        workers
            .spawn(
                "w",
                &CpuSet::from_cpus([0]),
                DEFAULT_STACK,
                |shared, meter| {
                    while !shared.stopping() {
                        meter.count(1, 0);
                    }
                },
            )
            .unwrap();
        assert_eq!(workers.stop().ops, 0);
    }

    #[test]
    fn an_unplaceable_thread_is_an_error_naming_the_generator() {
        let mut workers = Workers::new("cpu:50%@4000");
        let err = workers
            .spawn("w", &CpuSet::from_cpus([4000]), DEFAULT_STACK, |_, _| {
                panic!("must not run")
            })
            .unwrap_err();
        assert!(err.to_string().starts_with("cpu:50%@4000: "), "{err}");
    }

    #[test]
    fn rng_spreads_over_the_range() {
        let mut rng = Rng::new(0);
        let mut seen = [0u32; 10];
        for _ in 0..10_000 {
            seen[rng.below(10) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| (800..1200).contains(&n)), "{seen:?}");
    }

    #[test]
    fn counters_difference_saturates() {
        let a = Counters {
            ops: 5,
            bytes: 10,
            cpu_ns: 7,
        };
        let b = Counters {
            ops: 8,
            bytes: 10,
            cpu_ns: 3,
        };
        assert_eq!(
            b.since(&a),
            Counters {
                ops: 3,
                bytes: 0,
                cpu_ns: 0
            }
        );
    }
}
