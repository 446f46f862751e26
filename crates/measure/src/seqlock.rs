//! A single-writer sequence lock over a few machine words: the measuring thread publishes
//! without ever waiting, and readers (live view, checkpoints) retry until they see a
//! consistent copy.
//!
//! The memory orderings follow H.-J. Boehm, "Can seqlocks get along with programming language
//! memory models?" (MSPC 2012): the writer makes the sequence odd, issues a release fence,
//! stores the data, and publishes the even sequence with release; the reader loads the
//! sequence with acquire, loads the data, issues an acquire fence and re-reads the sequence.
//! On x86 and AArch64 the writer side compiles to plain stores and one barrier-free fence on
//! x86 (a `dmb ishst`-class barrier on AArch64): no locked instruction, no syscall.

use std::sync::atomic::{AtomicU64, Ordering, fence};

/// `N` words published together.
pub(crate) struct SeqWords<const N: usize> {
    seq: AtomicU64,
    words: [AtomicU64; N],
}

impl<const N: usize> SeqWords<N> {
    /// All words zero.
    pub(crate) fn new() -> SeqWords<N> {
        SeqWords {
            seq: AtomicU64::new(0),
            words: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Publishes `values`. Only one thread may ever call this.
    #[inline(always)]
    pub(crate) fn write(&self, values: &[u64; N]) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        for (w, &v) in self.words.iter().zip(values) {
            w.store(v, Ordering::Relaxed);
        }
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// A consistent copy of the words.
    pub(crate) fn read(&self) -> [u64; N] {
        loop {
            let s1 = self.seq.load(Ordering::Acquire);
            let values: [u64; N] = std::array::from_fn(|i| self.words[i].load(Ordering::Relaxed));
            fence(Ordering::Acquire);
            let s2 = self.seq.load(Ordering::Relaxed);
            if s1 == s2 && s1.is_multiple_of(2) {
                return values;
            }
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn readers_never_see_a_torn_write() {
        let cell = Arc::new(SeqWords::<4>::new());
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (cell, stop) = (cell.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    cell.write(&[i, i * 2, i * 3, !i]);
                }
                i
            })
        };
        for _ in 0..200_000 {
            let [a, b, c, d] = cell.read();
            assert_eq!((b, c, d), (a * 2, a * 3, if a == 0 { 0 } else { !a }));
        }
        stop.store(true, Ordering::Relaxed);
        assert!(writer.join().unwrap() > 0);
    }
}
