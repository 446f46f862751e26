//! One measuring thread per CPU, for the engines that measure from user space (the latency
//! sampler, the noise detector): started, each set up on its CPU, held at a barrier, released
//! at one common start, told to stop, joined. A [`Worker`] is the part that differs: how its
//! CPU is prepared (on its thread, before the start) and what it measures (its hot loop,
//! called directly, so each worker's loop is compiled for it: no dynamic call per sample).
//!
//! [`prepare_cpu`] is the preparation every worker shares: the thread pinned, its cell
//! allocated and touched, its stack pre-faulted, its scheduling policy taken last.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::thread::JoinHandle;

use sys::sched::SchedParams;

use crate::cell::CpuCell;
use crate::config::PREFAULT_STACK_BYTES;
use crate::env::RunError;

/// What the crew's threads and the main thread share.
pub(crate) struct Shared {
    /// Set to stop the measuring loops (by the main thread, or a worker ending the run).
    pub(crate) stop: AtomicBool,
    abort: AtomicBool,
    start: AtomicU64,
    barrier: Barrier,
    running: AtomicUsize,
}

impl Shared {
    /// The common start, on the engine's clock or counter (known once released).
    pub(crate) fn start(&self) -> u64 {
        self.start.load(Ordering::Acquire)
    }
}

/// The part of a measuring thread that differs between engines. It is moved to its thread.
pub(crate) trait Worker: Send + 'static {
    /// The thread's state as the main thread reads it.
    type Cell: Send + Sync + 'static;

    /// The CPU it measures.
    fn cpu(&self) -> u32;
    /// On its thread, before the common start: pinned, memory allocated and touched, policy
    /// taken (and whatever else must not happen during the measurement).
    fn prepare(&mut self) -> Result<Arc<Self::Cell>, RunError>;
    /// After the common start: measures until its plan ends or `shared.stop` is set.
    fn measure(self, cell: &Self::Cell, shared: &Shared);
}

/// The measuring threads of a run: their cells (in CPU order) and handles.
pub(crate) struct Crew<C> {
    shared: Arc<Shared>,
    cells: Vec<Arc<C>>,
    handles: Vec<JoinHandle<()>>,
    released: bool,
}

impl<C: Send + Sync + 'static> Crew<C> {
    /// Starts a thread per worker (named `{name}/{cpu}`) and waits until each has prepared
    /// (or one failed: then all are released, told to abort, joined, and the error returned).
    pub(crate) fn start<W: Worker<Cell = C>>(
        name: &str,
        stack_bytes: usize,
        workers: Vec<W>,
    ) -> Result<Crew<C>, RunError> {
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            abort: AtomicBool::new(false),
            start: AtomicU64::new(0),
            barrier: Barrier::new(workers.len() + 1),
            running: AtomicUsize::new(workers.len()),
        });
        let (tx, rx) = mpsc::channel();
        let mut handles = Vec::new();
        for (index, worker) in workers.into_iter().enumerate() {
            let cpu = worker.cpu();
            let thread_shared = Arc::clone(&shared);
            let tx = tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("{name}/{cpu}"))
                .stack_size(stack_bytes)
                .spawn(move || on_thread(index, worker, &thread_shared, &tx));
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // Threads already started wait at the barrier, which cannot complete now:
                    // told to abort, they never measure.
                    shared.abort.store(true, Ordering::Relaxed);
                    return Err(RunError::Thread {
                        cpu,
                        message: format!("cannot start a thread: {e}"),
                    });
                }
            }
        }
        drop(tx);
        let cells = gather(&rx, handles.len()).inspect_err(|_| {
            shared.abort.store(true, Ordering::Relaxed);
            shared.barrier.wait();
            for h in handles.drain(..) {
                let _ = h.join();
            }
        })?;
        Ok(Crew {
            shared,
            cells,
            handles,
            released: false,
        })
    }

    /// The common start: `start` (on the engine's clock) published, every thread released.
    pub(crate) fn release(&mut self, start: u64) {
        self.shared.start.store(start, Ordering::Release);
        self.shared.barrier.wait();
        self.released = true;
    }

    /// The threads' cells, in CPU order.
    pub(crate) fn cells(&self) -> &[Arc<C>] {
        &self.cells
    }

    /// Whether the measurement has ended: every thread out of its loop, or told to stop.
    pub(crate) fn ended(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed) || self.shared.running.load(Ordering::Acquire) == 0
    }

    /// Tells every thread to stop.
    pub(crate) fn stop(&self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }

    /// Waits for every thread to end (after [`Crew::stop`], or the end of their plans).
    pub(crate) fn join(&mut self) {
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

impl<C> Drop for Crew<C> {
    /// A crew dropped before its end (an error, a panic) still releases and joins its
    /// threads, so none is left waiting or measuring.
    fn drop(&mut self) {
        if self.handles.is_empty() {
            return;
        }
        if !self.released {
            self.shared.abort.store(true, Ordering::Relaxed);
            self.shared.barrier.wait();
        }
        self.shared.stop.store(true, Ordering::Relaxed);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// A thread's report of its preparation: its index and its cell, or why it has none.
type Report<C> = (usize, Result<Arc<C>, RunError>);

/// Each started thread's report of its preparation, in CPU order; the first error if one
/// failed.
fn gather<C>(rx: &mpsc::Receiver<Report<C>>, n: usize) -> Result<Vec<Arc<C>>, RunError> {
    let mut cells: Vec<Option<Arc<C>>> = (0..n).map(|_| None).collect();
    let mut failure = None;
    for (index, outcome) in rx.iter().take(n) {
        match outcome {
            Ok(cell) => cells[index] = Some(cell),
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(cells.into_iter().flatten().collect()),
    }
}

/// Counts a thread out when it leaves (also when its loop panics), so the end is noticed.
struct Leaving<'a>(&'a AtomicUsize);

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A measuring thread: prepare, report, wait for the common start, measure.
fn on_thread<W: Worker>(
    index: usize,
    mut worker: W,
    shared: &Shared,
    ready: &mpsc::Sender<Report<W::Cell>>,
) {
    let cell = match worker.prepare() {
        Ok(cell) => {
            let _ = ready.send((index, Ok(Arc::clone(&cell))));
            cell
        }
        Err(e) => {
            let _ = ready.send((index, Err(e)));
            shared.barrier.wait();
            return;
        }
    };
    shared.barrier.wait();
    if shared.abort.load(Ordering::Relaxed) {
        return;
    }
    let _leaving = Leaving(&shared.running);
    worker.measure(&cell, shared);
}

/// How a measuring thread's CPU is prepared.
#[derive(Clone, Debug)]
pub(crate) struct ThreadSetup {
    pub(crate) cpu: u32,
    /// A real run: pinned, pre-faulted, at its policy (a scripted one changes nothing).
    pub(crate) real: bool,
    pub(crate) sched: SchedParams,
    pub(crate) prefault: bool,
    pub(crate) spikes: u32,
    pub(crate) series_slots: usize,
    pub(crate) slot_ns: u64,
}

/// Pins the thread, allocates and touches its memory, pre-faults its stack, then takes the
/// scheduling policy (last, so the setup work does not run at real-time priority).
pub(crate) fn prepare_cpu(setup: &ThreadSetup) -> Result<Arc<CpuCell>, RunError> {
    let fail = |message: String| RunError::Thread {
        cpu: setup.cpu,
        message,
    };
    if setup.real {
        sys::sched::pin_current_thread(&model::CpuSet::from_cpus([setup.cpu]))
            .map_err(|e| fail(format!("cannot pin the measuring thread: {e}")))?;
    }
    let cell = Arc::new(CpuCell::new(
        setup.cpu,
        setup.spikes,
        setup.series_slots,
        setup.slot_ns,
    ));
    cell.tid.store(sys::sched::current_tid(), Ordering::Relaxed);
    if setup.real {
        if setup.prefault {
            sys::mem::prefault_stack(PREFAULT_STACK_BYTES);
        }
        sys::sched::set_current_thread_policy(&setup.sched)
            .map_err(|e| fail(format!("cannot set the scheduling policy: {e}")))?;
    }
    Ok(cell)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker that counts to its `limit` (or until told to stop), or fails to prepare.
    struct Counter {
        cpu: u32,
        limit: u64,
        fail: bool,
        measured: Arc<AtomicUsize>,
    }

    impl Worker for Counter {
        type Cell = AtomicU64;
        fn cpu(&self) -> u32 {
            self.cpu
        }
        fn prepare(&mut self) -> Result<Arc<AtomicU64>, RunError> {
            if self.fail {
                return Err(RunError::Thread {
                    cpu: self.cpu,
                    message: "refused".into(),
                });
            }
            Ok(Arc::new(AtomicU64::new(0)))
        }
        fn measure(self, cell: &AtomicU64, shared: &Shared) {
            self.measured.fetch_add(1, Ordering::Relaxed);
            cell.store(shared.start(), Ordering::Relaxed);
            while cell.load(Ordering::Relaxed) < shared.start().saturating_add(self.limit)
                && !shared.stop.load(Ordering::Relaxed)
            {
                cell.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn start_crew(
        limits: &[u64],
        fail: Option<u32>,
    ) -> (Result<Crew<AtomicU64>, RunError>, Arc<AtomicUsize>) {
        let measured = Arc::new(AtomicUsize::new(0));
        let workers = limits
            .iter()
            .enumerate()
            .map(|(cpu, &limit)| Counter {
                cpu: cpu as u32,
                limit,
                fail: fail == Some(cpu as u32),
                measured: Arc::clone(&measured),
            })
            .collect();
        (Crew::start("test", 256 << 10, workers), measured)
    }

    #[test]
    fn every_thread_starts_from_the_common_start_and_the_end_is_noticed() {
        let (crew, measured) = start_crew(&[10, 1_000, 5], None);
        let mut crew = crew.unwrap();
        assert!(!crew.ended(), "ended before the start");
        crew.release(7_000);
        while !crew.ended() {
            std::thread::yield_now();
        }
        crew.join();
        let counts: Vec<u64> = crew
            .cells()
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        assert_eq!(counts, vec![7_010, 8_000, 7_005]);
        assert_eq!(measured.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn a_thread_that_cannot_prepare_fails_the_start_and_none_measures() {
        let (crew, measured) = start_crew(&[u64::MAX, u64::MAX, u64::MAX], Some(1));
        match crew {
            Err(RunError::Thread { cpu: 1, message }) => assert_eq!(message, "refused"),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("started"),
        }
        assert_eq!(measured.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn stop_ends_loops_that_would_run_forever() {
        let (crew, _) = start_crew(&[u64::MAX, u64::MAX], None);
        let mut crew = crew.unwrap();
        crew.release(0);
        crew.stop();
        assert!(crew.ended());
        crew.join();
    }

    #[test]
    fn a_crew_dropped_before_its_start_lets_its_threads_go_unmeasured() {
        let (crew, measured) = start_crew(&[u64::MAX, u64::MAX], None);
        drop(crew.unwrap());
        assert_eq!(measured.load(Ordering::Relaxed), 0);
        let (crew, measured) = start_crew(&[u64::MAX], None);
        let mut crew = crew.unwrap();
        crew.release(0);
        drop(crew);
        assert_eq!(measured.load(Ordering::Relaxed), 1, "stopped and joined");
    }
}
