//! `rtlab monitor --push URL`: what the monitor keeps, sent to a fleet server from a thread of
//! its own, so a slow or unreachable server never holds up the measuring: each stored
//! interval (as the store holds it, the parts of a restarted interval merged) with the
//! incidents of its time, and each new incident at once with the run that holds its trace.
//! What cannot be sent waits in the push queue (`rtlab push` or the next push sends it). The
//! thread's CPU time is counted, so the interval's cost puts it with the housekeeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use model::measure::MeasureRun;
use model::monitor::{HistoryDoc, Incident, Interval};
use push::About;

use crate::console::Console;
use crate::push_to::{Given, Pusher};

/// The session an incident's run is pushed under.
const SESSION: &str = "monitor";

/// One thing to send.
enum Job {
    /// An incident's run: the document, its local id and its label.
    Run(Box<MeasureRun>, Option<String>, String),
    /// Intervals and incidents.
    History(HistoryDoc),
}

/// The pushing thread, while the monitor runs.
pub(crate) struct PushWorker {
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    cpu_ns: Arc<AtomicU64>,
}

impl PushWorker {
    /// Starts the thread that sends through `pusher`.
    pub(crate) fn start(pusher: Pusher) -> std::io::Result<PushWorker> {
        let (jobs, received) = channel();
        let cpu_ns = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&cpu_ns);
        let thread = std::thread::Builder::new()
            .name("rtlab-push".into())
            .spawn(move || send_all(pusher, &received, &counted))?;
        Ok(PushWorker {
            jobs: Some(jobs),
            thread: Some(thread),
            cpu_ns,
        })
    }

    fn send(&self, job: Job) {
        if let Some(jobs) = &self.jobs {
            // The thread ends only when this side is dropped: a send cannot fail before.
            let _ = jobs.send(job);
        }
    }

    /// Sends a new incident now, with the run that holds its trace (stored locally as
    /// `incident.run_id`, if it was).
    pub(crate) fn incident(&self, incident: &Incident, run: &MeasureRun, label: String) {
        self.send(Job::Run(
            Box::new(run.clone()),
            incident.run_id.clone(),
            label,
        ));
        self.send(Job::History(HistoryDoc::new(
            &incident.host,
            Vec::new(),
            vec![incident.clone()],
        )));
    }

    /// Sends a stored interval and the incidents of its time.
    pub(crate) fn interval(&self, interval: Interval, incidents: Vec<Incident>) {
        let host = interval.host.clone();
        self.send(Job::History(HistoryDoc::new(
            &host,
            vec![interval],
            incidents,
        )));
    }

    /// The CPU time the thread has used, ns.
    pub(crate) fn cpu_ns(&self) -> u64 {
        self.cpu_ns.load(Ordering::Relaxed)
    }

    /// Sends what is left (a server found down queues it at once) and ends the thread.
    pub(crate) fn finish(&mut self) {
        self.jobs = None;
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

/// The thread: every job in order, until the monitor drops its side.
fn send_all(mut pusher: Pusher, jobs: &Receiver<Job>, cpu_ns: &AtomicU64) {
    let mut console = Console::new(false);
    for job in jobs {
        let given = match job {
            Job::Run(run, local_id, label) => Given {
                what: local_id
                    .as_ref()
                    .map_or_else(|| "an incident's run".to_string(), |id| format!("run {id}")),
                document: run.to_json(),
                about: About::of(&run, local_id.as_deref()),
                label: Some(label),
                session: Some(SESSION.to_string()),
            },
            Job::History(doc) => Given {
                what: history_name(&doc),
                document: doc.to_json(),
                about: About {
                    run_id: None,
                    host: doc.host.clone(),
                    started_at: first_start(&doc),
                },
                label: None,
                session: None,
            },
        };
        pusher.push_given(given, &mut console);
        cpu_ns.store(sys::clock::thread_cpu_ns(), Ordering::Relaxed);
    }
}

/// How a history push is named in messages: `the interval of 2026-11-30T04:15:00Z` or
/// `incident ID`.
fn history_name(doc: &HistoryDoc) -> String {
    match (doc.intervals.first(), doc.incidents.first()) {
        (Some(i), _) => format!("the interval of {}", report::monitor::utc(i.start_ns)),
        (None, Some(x)) => format!("incident {}", x.id),
        (None, None) => "a history".to_string(),
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
