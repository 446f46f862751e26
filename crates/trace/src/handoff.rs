//! Two threads over one trace: a producer on a second thread fills batches (lines read and
//! split, or records read and merged) and hands them over; the calling thread visits them in
//! order and gives them back to be filled again. At most a fixed number wait between the two,
//! so memory stays bounded; either side stopping (at the end, or by a panic) releases the
//! other. A mutex and two condition variables rather than `std::sync::mpsc`: a channel's three
//! flavours are compiled for each batch type, and the boards' binary has a size budget
//! (decision 0016).

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// What the two sides share.
struct Shared<T> {
    state: Mutex<State<T>>,
    /// Signalled when a batch is handed over or the producer stops.
    filled: Condvar,
    /// Signalled when a batch is taken or the consumer stops.
    taken: Condvar,
}

struct State<T> {
    /// Handed over, in order, not yet taken.
    full: VecDeque<T>,
    /// Given back, to be filled again.
    empty: Vec<T>,
    producing: bool,
    consuming: bool,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panic on the other side while it held the lock leaves nothing half-changed here
        // (every change is one push or pop), so the state is still good.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The producer's end.
pub(crate) struct Hand<'h, T> {
    shared: &'h Shared<T>,
    waiting: usize,
}

impl<T: Default> Hand<'_, T> {
    /// A batch to fill: one given back, or a new one.
    pub(crate) fn fresh(&self) -> T {
        self.shared.lock().empty.pop().unwrap_or_default()
    }

    /// Hands `batch` over, waiting while as many as allowed wait already; false when the
    /// consumer has stopped (the producer should stop too).
    pub(crate) fn send(&self, batch: T) -> bool {
        let mut s = self.shared.lock();
        while s.consuming && s.full.len() >= self.waiting {
            s = self
                .shared
                .taken
                .wait(s)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if !s.consuming {
            return false;
        }
        s.full.push_back(batch);
        self.shared.filled.notify_one();
        true
    }
}

/// Marks one side stopped when dropped (also while unwinding) and wakes the other.
struct Stop<'h, T> {
    shared: &'h Shared<T>,
    producer: bool,
}

impl<T> Drop for Stop<'_, T> {
    fn drop(&mut self) {
        let mut s = self.shared.lock();
        if self.producer {
            s.producing = false;
        } else {
            s.consuming = false;
            s.full.clear();
        }
        drop(s);
        self.shared.filled.notify_all();
        self.shared.taken.notify_all();
    }
}

/// Runs `produce` on a second thread and `consume` on this one for each batch it hands over,
/// in order, with at most `waiting` batches between them; then `produce`'s result. `None`
/// when no thread could be started (nothing ran: the caller reads on its own thread).
/// A panic on either side is carried to the caller.
pub(crate) fn run<T, Out, P>(waiting: usize, produce: P, consume: &mut dyn FnMut(&T)) -> Option<Out>
where
    T: Default + Send,
    Out: Send,
    P: FnOnce(&Hand<'_, T>) -> Out + Send,
{
    let shared = Shared {
        state: Mutex::new(State {
            full: VecDeque::new(),
            empty: Vec::new(),
            producing: true,
            consuming: true,
        }),
        filled: Condvar::new(),
        taken: Condvar::new(),
    };
    let hand = Hand {
        shared: &shared,
        waiting: waiting.max(1),
    };
    std::thread::scope(|s| {
        let producer = std::thread::Builder::new()
            .name("rtlab-trace-read".to_string())
            .spawn_scoped(s, || {
                let _stop = Stop {
                    shared: &shared,
                    producer: true,
                };
                produce(&hand)
            })
            .ok()?;
        {
            let _stop = Stop {
                shared: &shared,
                producer: false,
            };
            while let Some(batch) = next(&shared) {
                consume(&batch);
                shared.lock().empty.push(batch);
            }
        }
        match producer.join() {
            Ok(out) => Some(out),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// The next batch handed over; `None` once the producer stopped and all were taken.
fn next<T>(shared: &Shared<T>) -> Option<T> {
    let mut s = shared.lock();
    loop {
        if let Some(batch) = s.full.pop_front() {
            shared.taken.notify_one();
            return Some(batch);
        }
        if !s.producing {
            return None;
        }
        s = shared
            .filled
            .wait(s)
            .unwrap_or_else(PoisonError::into_inner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_arrive_in_order_and_are_reused() {
        let mut seen = Vec::new();
        let made = run(
            2,
            |hand: &Hand<'_, Vec<u32>>| {
                let mut made = 0;
                for i in 0..1000u32 {
                    let mut b = hand.fresh();
                    if b.capacity() == 0 {
                        made += 1;
                    }
                    b.clear();
                    b.extend([i, i + 1]);
                    assert!(hand.send(b));
                }
                made
            },
            &mut |b: &Vec<u32>| seen.push(b[0]),
        )
        .unwrap();
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
        assert!(
            made < 10,
            "batches are given back and filled again: {made} made"
        );
    }

    #[test]
    fn a_consumer_that_panics_stops_the_producer() {
        let mut n = 0;
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run(
                2,
                |hand: &Hand<'_, Vec<u8>>| while hand.send(hand.fresh()) {},
                &mut |_| {
                    n += 1;
                    assert!(n < 100, "the consumer gives up");
                },
            )
        }));
        assert!(caught.is_err());
        assert_eq!(n, 100);
    }

    #[test]
    fn a_producer_that_panics_is_carried_to_the_caller() {
        let caught = std::panic::catch_unwind(|| {
            run(
                2,
                |hand: &Hand<'_, Vec<u8>>| {
                    hand.send(vec![1]);
                    panic!("the producer gives up");
                },
                &mut |_| {},
            )
        });
        assert!(caught.is_err());
    }
}
