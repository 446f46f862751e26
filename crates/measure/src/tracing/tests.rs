//! The worst latency kept in the snapshot buffer, on a fixture tree: a new maximum swaps the
//! buffers (`1` to `snapshot`, after `2` empties it), an equal one does not, and a spike in
//! progress holds the swap back for a few ticks only.

use super::{DEFER_TICKS, IN_PROGRESS_NS, Session, WorstKept};
use crate::config::TraceOptions;
use sys::Root;
use sys::trace_instance::Instance;
use sys::tracefs::Tracefs;

/// A session on a fixture instance whose `snapshot` file records the last value written.
fn session(tree: &std::path::Path) -> Session {
    std::fs::create_dir_all(tree.join("instances")).unwrap();
    let instance = Instance::create(&Tracefs::at(tree)).unwrap();
    std::fs::write(instance.dir().join("snapshot"), "").unwrap();
    assert!(instance.has_snapshot());
    Session {
        instance,
        root: Root::host(),
        options: TraceOptions::default(),
        clock: "mono".to_string(),
        events: Vec::new(),
        missing: Vec::new(),
        worst: WorstKept {
            able: true,
            ..WorstKept::default()
        },
    }
}

fn written(s: &Session) -> String {
    std::fs::read_to_string(s.instance.dir().join("snapshot")).unwrap()
}

#[test]
fn a_new_maximum_is_set_aside_and_an_equal_one_is_not() {
    let tree = tempfile::tempdir().unwrap();
    let mut s = session(tree.path());
    s.keep_worst(|| 0, || 0);
    assert_eq!(
        (s.worst.times, written(&s).as_str()),
        (0, ""),
        "no sample yet"
    );
    s.keep_worst(|| 40_000, || 0);
    assert_eq!((s.worst.times, s.worst.max_ns), (1, 40_000));
    assert_eq!(written(&s), "1", "the swap comes last");
    std::fs::write(s.instance.dir().join("snapshot"), "").unwrap();
    s.keep_worst(|| 40_000, || 0);
    assert_eq!((s.worst.times, written(&s).as_str()), (1, ""));
    assert!(s.worst.at_ns.is_some());
}

#[test]
fn a_small_spike_in_progress_holds_the_swap_back_for_a_few_ticks_only() {
    let tree = tempfile::tempdir().unwrap();
    let mut s = session(tree.path());
    // A thread 20 us past its deadline is no spike in progress.
    s.keep_worst(|| 1_000_000, || 20_000);
    assert_eq!(s.worst.times, 1);
    // One 100 us late is: the new worst of 5 ms waits a few ticks for it.
    for tick in 0..DEFER_TICKS {
        s.keep_worst(|| 5_000_000, || 2 * IN_PROGRESS_NS);
        assert_eq!(
            s.worst.times, 1,
            "tick {tick}: swapped while a thread was late"
        );
    }
    s.keep_worst(|| 5_000_000, || 2 * IN_PROGRESS_NS);
    assert_eq!(
        (s.worst.times, s.worst.max_ns),
        (2, 5_000_000),
        "the new worst must be set aside before the buffer moves on"
    );
    assert_eq!(s.worst.deferred, 0);
}

/// A spike in progress already half the new worst may become the next one: setting the buffer
/// aside now would cut it in two, so the swap waits for it as long as it lasts.
#[test]
fn a_large_spike_in_progress_holds_the_swap_back_until_it_ends() {
    let tree = tempfile::tempdir().unwrap();
    let mut s = session(tree.path());
    for _ in 0..10 * DEFER_TICKS {
        s.keep_worst(|| 4_000_000, || 3_000_000);
    }
    assert_eq!(s.worst.times, 0);
    s.keep_worst(|| 119_000_000, || 0);
    assert_eq!((s.worst.times, s.worst.max_ns), (1, 119_000_000));
}

/// A spike that ends while the snapshot buffer is being emptied is in the snapshot: it must
/// count as kept, or the next tick would take it for a new worst and clear it.
#[test]
fn the_maximum_kept_is_the_one_at_the_swap() {
    let tree = tempfile::tempdir().unwrap();
    let mut s = session(tree.path());
    let reads = std::cell::Cell::new(0);
    let max = || {
        reads.set(reads.get() + 1);
        if reads.get() == 1 {
            3_000_000
        } else {
            74_000_000
        }
    };
    s.keep_worst(max, || 0);
    assert_eq!((s.worst.times, s.worst.max_ns), (1, 74_000_000));
    std::fs::write(s.instance.dir().join("snapshot"), "").unwrap();
    s.keep_worst(|| 74_000_000, || 0);
    assert_eq!((s.worst.times, written(&s).as_str()), (1, ""));
}

#[test]
fn without_a_snapshot_buffer_nothing_is_written() {
    let tree = tempfile::tempdir().unwrap();
    let mut s = session(tree.path());
    s.worst.able = false;
    s.keep_worst(|| 1_000_000, || 0);
    assert_eq!((s.worst.times, written(&s).as_str()), (0, ""));
}
