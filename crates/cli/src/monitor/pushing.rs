//! `rtlab monitor --push URL`: what the monitor keeps, sent to a fleet server from a thread of
//! its own, so a slow or unreachable server never holds up the measuring: each stored
//! interval (as the store holds it, the parts of a restarted interval merged) with the
//! incidents of its time, and each new incident at once with the run that holds its trace.
//!
//! The push queue is the outbox: the monitor's loop writes each document there first (a file
//! written whole, as `rtlab push` reads it), then wakes the thread, which sends what the queue
//! holds for the server, oldest first, and removes what the server took. A monitor killed
//! (SIGKILL, a power cut) with pushes not yet sent leaves them in the queue, for its next
//! start or `rtlab push`. The thread's CPU time is counted, so the interval's cost puts it
//! with the housekeeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use model::measure::MeasureRun;
use model::monitor::{HistoryDoc, Incident, Interval};
use push::{About, Queue, QueuedRun, Target};

use crate::console::Console;
use crate::push_to::Pusher;

/// The session an incident's run is pushed under.
const SESSION: &str = "monitor";

/// The pushing thread, while the monitor runs.
pub(crate) struct PushWorker {
    queue: Queue,
    target: Target,
    wake: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
    cpu_ns: Arc<AtomicU64>,
}

impl PushWorker {
    /// Starts the thread that sends through `pusher`; it first sends what an earlier monitor
    /// (or command) left queued for the server.
    pub(crate) fn start(pusher: Pusher) -> std::io::Result<PushWorker> {
        let (queue, target) = pusher.outbox();
        let (wake, woken) = channel();
        let cpu_ns = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&cpu_ns);
        let thread = std::thread::Builder::new()
            .name("rtlab-push".into())
            .spawn(move || send_all(pusher, &woken, &counted))?;
        let worker = PushWorker {
            queue,
            target,
            wake: Some(wake),
            thread: Some(thread),
            cpu_ns,
        };
        worker.wake();
        Ok(worker)
    }

    fn wake(&self) {
        if let Some(wake) = &self.wake {
            // The thread ends only when this side is dropped: a send cannot fail before.
            let _ = wake.send(());
        }
    }

    /// Writes a document (an incident's run with its label, or a history) to the queue, then
    /// wakes the thread to send it. A queue that cannot
    /// be written is said, and the document is lost to the server (the local store keeps it).
    fn post(&self, document: String, about: About, run: Option<&str>, console: &mut Console) {
        let session = run.map(|_| SESSION);
        let queued = QueuedRun::new(&self.target, document, about, run, session);
        if let Err(e) = self.queue.enqueue(queued) {
            console.warn(&format!(
                "--push: the push queue {}: {e}; this push is not sent (the store keeps it)",
                self.queue.dir().display()
            ));
        }
        self.wake();
    }

    /// Sends a new incident now, with the run that holds its trace (stored locally as
    /// `incident.run_id`, if it was).
    pub(crate) fn incident(
        &self,
        incident: &Incident,
        run: &MeasureRun,
        label: String,
        console: &mut Console,
    ) {
        let about = About::of(run, incident.run_id.as_deref());
        self.post(run.to_json(), about, Some(&label), console);
        let doc = HistoryDoc::new(&incident.host, Vec::new(), vec![incident.clone()]);
        self.post(doc.to_json(), about_history(&doc), None, console);
    }

    /// Sends a stored interval and the incidents of its time.
    pub(crate) fn interval(
        &self,
        interval: Interval,
        incidents: Vec<Incident>,
        console: &mut Console,
    ) {
        let host = interval.host.clone();
        let doc = HistoryDoc::new(&host, vec![interval], incidents);
        self.post(doc.to_json(), about_history(&doc), None, console);
    }

    /// The CPU time the thread has used, ns.
    pub(crate) fn cpu_ns(&self) -> u64 {
        self.cpu_ns.load(Ordering::Relaxed)
    }

    /// Sends what is left (a server found down keeps it queued) and ends the thread.
    pub(crate) fn finish(&mut self) {
        self.wake = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for PushWorker {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The thread: at each wake (those that came while it was sending taken as one), what the
/// queue holds is sent; until the monitor drops its side.
fn send_all(mut pusher: Pusher, woken: &Receiver<()>, cpu_ns: &AtomicU64) {
    let mut console = Console::new(false);
    while woken.recv().is_ok() {
        while woken.try_recv().is_ok() {}
        pusher.flush(&mut console);
        cpu_ns.store(sys::clock::thread_cpu_ns(), Ordering::Relaxed);
    }
}

/// How a history is named in the queue's listing: its host and first start.
fn about_history(doc: &HistoryDoc) -> About {
    About {
        run_id: None,
        host: doc.host.clone(),
        started_at: first_start(doc),
    }
}

/// The first start a history names, RFC 3339 (for the queue's listing).
fn first_start(doc: &HistoryDoc) -> Option<String> {
    doc.intervals
        .first()
        .map(|i| i.start_ns)
        .or_else(|| doc.incidents.first().map(|x| x.start_ns))
        .map(report::monitor::utc)
}
