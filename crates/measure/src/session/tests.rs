//! The session's order of work, with a scripted engine and a scripted signal: what is called
//! when, what an error skips, and that the engine is always dropped (its guards released).

use std::cell::RefCell;
use std::rc::Rc;

use model::Nanos;
use model::measure::{MeasureRun, Progress, RunStatus};

use super::*;

type Log = Rc<RefCell<Vec<String>>>;

fn say(log: &Log, what: impl Into<String>) {
    log.borrow_mut().push(what.into());
}

/// An engine that ends by itself after `looks` looks, fails at `fail_at`, and logs each call.
struct Scripted {
    log: Log,
    looks: usize,
    fail_at: Option<&'static str>,
    live: bool,
}

impl Scripted {
    fn step(&self, name: &'static str) -> Result<(), RunError> {
        say(&self.log, name);
        match self.fail_at {
            Some(at) if at == name => Err(RunError::Setup(format!("{name} failed"))),
            _ => Ok(()),
        }
    }
}

fn empty() -> MeasureRun {
    crate::run::not_started(
        &crate::Config::from_request(&crate::Request {
            cpus: model::CpuSet::from_cpus([0]),
            ..crate::Request::default()
        })
        .unwrap(),
        &crate::Environment {
            root: sys::Root::at("/nonexistent"),
            clock: crate::ClockChoice::Fake(crate::FakeScript::parse("1us").unwrap()),
        },
    )
}

impl Engine for Scripted {
    type Output = RunStatus;
    type Document = MeasureRun;

    fn prepare(&mut self) -> Result<MainThread, RunError> {
        self.step("prepare").map(|()| MainThread::default())
    }
    fn start(&mut self) -> Result<(), RunError> {
        self.step("start")
    }
    fn go(&mut self) -> Result<MeasureRun, RunError> {
        self.step("go").map(|()| empty())
    }
    fn tick(&self) -> Duration {
        Duration::ZERO
    }
    fn ended(&mut self) -> bool {
        say(&self.log, "ended?");
        if self.looks == 0 {
            return true;
        }
        self.looks -= 1;
        false
    }
    fn progress(&self) -> Option<Progress> {
        self.live.then(|| {
            say(&self.log, "progress");
            crate::result::progress(std::iter::empty(), Nanos::ZERO, Nanos::ZERO)
        })
    }
    fn checkpoint_every(&self) -> Option<Duration> {
        self.live.then_some(Duration::ZERO)
    }
    fn checkpoint(&self) -> MeasureRun {
        say(&self.log, "checkpoint");
        empty()
    }
    fn stop(&mut self) {
        say(&self.log, "stop");
    }
    fn finish(self, status: RunStatus) -> Result<RunStatus, RunError> {
        say(&self.log, format!("finish {}", status.as_str()));
        Ok(status)
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        say(&self.log, "dropped");
    }
}

struct Seen(Log);

impl Observer for Seen {
    fn started(&mut self, _: &MeasureRun) {
        say(&self.0, "(started)");
    }
    fn progress(&mut self, _: &Progress) {
        say(&self.0, "(progress)");
    }
    fn checkpoint(&mut self, _: &MeasureRun) {
        say(&self.0, "(checkpoint)");
    }
    fn finished(&mut self) {
        say(&self.0, "(finished)");
    }
}

/// Progress and checkpoints at every tick.
const EVERY_TICK: Pace = Pace {
    progress_every: Duration::ZERO,
    first_checkpoint: Duration::ZERO,
};

/// Runs `engine`; a signal comes at the `signal_at`-th wait (from 1), if given.
fn session(
    looks: usize,
    fail_at: Option<&'static str>,
    live: bool,
    signal_at: Option<usize>,
) -> (Result<RunStatus, RunError>, Vec<String>) {
    let log = Log::default();
    let engine = Scripted {
        log: Rc::clone(&log),
        looks,
        fail_at,
        live,
    };
    let mut waits = 0;
    let mut signal = |_| {
        waits += 1;
        Some(waits) == signal_at
    };
    let out = drive(engine, &mut Seen(Rc::clone(&log)), &mut signal, EVERY_TICK);
    let said = log.borrow().clone();
    (out, said)
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(|w| w.replace('_', " ")).collect()
}

#[test]
fn an_engine_runs_in_order_with_progress_and_checkpoints_between_looks() {
    let (out, said) = session(2, None, true, None);
    assert_eq!(out.unwrap(), RunStatus::Complete);
    assert_eq!(
        said,
        words(
            "prepare start go (started) \
             ended? progress (progress) checkpoint (checkpoint) \
             ended? progress (progress) checkpoint (checkpoint) \
             ended? stop (finished) finish_complete dropped"
        )
    );
}

#[test]
fn a_signal_interrupts_and_the_engine_still_stops_in_order() {
    let (out, said) = session(usize::MAX, None, false, Some(3));
    assert_eq!(out.unwrap(), RunStatus::Interrupted);
    assert_eq!(
        said,
        words(
            "prepare start go (started) ended? ended? stop (finished) finish_interrupted dropped"
        )
    );
}

#[test]
fn a_failed_step_skips_the_rest_and_the_engine_is_dropped() {
    for (at, expect) in [
        ("prepare", "prepare dropped"),
        ("start", "prepare start dropped"),
        ("go", "prepare start go dropped"),
    ] {
        let (out, said) = session(0, Some(at), true, None);
        assert_eq!(out.unwrap_err().to_string(), format!("{at} failed"));
        assert_eq!(said, words(expect), "failing at {at}");
    }
}

#[test]
fn an_engine_without_a_live_view_or_checkpoints_is_only_watched() {
    let (out, said) = session(3, None, false, None);
    assert_eq!(out.unwrap(), RunStatus::Complete);
    assert_eq!(
        said,
        words(
            "prepare start go (started) ended? ended? ended? ended? stop (finished) finish_complete dropped"
        )
    );
}
