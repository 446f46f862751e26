//! A recording's records read on a second thread: the pages read (and decompressed), the
//! CPUs' records merged into time order, and each record's bytes copied into a batch handed
//! over; the thread that called [`Source::each`](crate::source::Source::each) decodes them
//! and runs the pass. The reading thread takes the page reads, the decompression and the
//! merge (a fifth of a pass over an uncompressed file, more over a compressed one) off the
//! decoding one.
//!
//! Records arrive in the stream's order, and what the stream met ([`tracedat::ReadReport`])
//! is the same as when one thread reads. Memory stays bounded: [`IN_FLIGHT`] batches of at
//! most [`BATCH_BYTES`] of records and [`BATCH_ITEMS`] items, reused.

use tracedat::{Item as DatItem, ReadAt, Record};

use crate::handoff::{self, Hand};

/// Bytes of records a batch holds before it is handed over (a record is at most a page).
const BATCH_BYTES: usize = 256 << 10;

/// Items a batch holds at most.
const BATCH_ITEMS: usize = 8192;

/// Batches handed over and not yet decoded, at most (besides the one being filled and the one
/// being decoded).
const IN_FLIGHT: usize = 2;

/// One item of the stream, its record as a range of the batch's bytes.
#[derive(Clone, Copy, Debug)]
enum Rec {
    Event {
        cpu: u32,
        ts: u64,
        start: u32,
        end: u32,
    },
    Lost {
        cpu: u32,
        ts: u64,
        count: Option<u64>,
    },
}

/// Records read, handed over together.
#[derive(Default)]
struct Batch {
    data: Vec<u8>,
    recs: Vec<Rec>,
}

impl Batch {
    fn full(&self) -> bool {
        self.data.len() >= BATCH_BYTES || self.recs.len() >= BATCH_ITEMS
    }

    fn push(&mut self, item: DatItem<'_>) {
        let rec = match item {
            DatItem::Event(r) => {
                let start = self.data.len();
                self.data.extend_from_slice(r.data);
                // A batch is handed over long before 4 GiB.
                Rec::Event {
                    cpu: r.cpu,
                    ts: r.ts,
                    start: u32::try_from(start).unwrap_or(u32::MAX),
                    end: u32::try_from(self.data.len()).unwrap_or(u32::MAX),
                }
            }
            DatItem::Lost { cpu, ts, count } => Rec::Lost { cpu, ts, count },
        };
        self.recs.push(rec);
    }

    fn clear(&mut self) {
        self.data.clear();
        self.recs.clear();
    }

    fn visit(&self, visit: &mut dyn FnMut(DatItem<'_>)) {
        for rec in &self.recs {
            visit(match *rec {
                Rec::Event {
                    cpu,
                    ts,
                    start,
                    end,
                } => DatItem::Event(Record {
                    cpu,
                    ts,
                    data: self.data.get(start as usize..end as usize).unwrap_or(&[]),
                }),
                Rec::Lost { cpu, ts, count } => DatItem::Lost { cpu, ts, count },
            });
        }
    }
}

/// Reads every item of `events` on a second thread and visits them here, in order (on this
/// thread alone when no thread can be started).
pub(super) fn each<R: ReadAt>(
    events: &mut tracedat::Events<'_, R>,
    visit: &mut dyn FnMut(DatItem<'_>),
) {
    let ev = &mut *events;
    let produced = handoff::run(IN_FLIGHT, move |hand| read(ev, hand), &mut |b: &Batch| {
        b.visit(visit);
    });
    if produced.is_none() {
        while let Some(item) = events.next() {
            visit(item);
        }
    }
}

/// The reading thread: items into batches, handed over when full and at the end.
fn read<R: ReadAt>(events: &mut tracedat::Events<'_, R>, hand: &Hand<'_, Batch>) {
    let fresh = || {
        let mut b = hand.fresh();
        b.clear();
        b
    };
    let mut batch = fresh();
    while let Some(item) = events.next() {
        batch.push(item);
        if batch.full() {
            if !hand.send(batch) {
                return; // the decoding side is gone (it panicked)
            }
            batch = fresh();
        }
    }
    if !batch.recs.is_empty() {
        hand.send(batch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> Vec<u8> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/traces/tracedat/cyclictest_2cpu_v7_zstd.dat"
        );
        std::fs::read(path).unwrap()
    }

    /// Each item as (CPU, time, record bytes or the lost count).
    fn key(item: DatItem<'_>) -> (u32, u64, Vec<u8>, Option<Option<u64>>) {
        match item {
            DatItem::Event(r) => (r.cpu, r.ts, r.data.to_vec(), None),
            DatItem::Lost { cpu, ts, count } => (cpu, ts, Vec::new(), Some(count)),
        }
    }

    #[test]
    fn the_items_arrive_as_one_thread_reads_them() {
        let bytes = fixture();
        let dat = tracedat::TraceDat::open(&bytes[..]).unwrap();
        let mut alone = Vec::new();
        let mut events = dat.events(0);
        while let Some(item) = events.next() {
            alone.push(key(item));
        }
        let alone_report = events.report().clone();
        let mut threaded = Vec::new();
        let mut events = dat.events(0);
        each(&mut events, &mut |item| threaded.push(key(item)));
        assert!(
            alone.len() > 2 * BATCH_ITEMS / 2,
            "several batches: {}",
            alone.len()
        );
        assert_eq!(threaded, alone);
        assert_eq!(events.report(), &alone_report);
    }

    #[test]
    fn a_visitor_that_panics_stops_the_reader() {
        let bytes = fixture();
        let dat = tracedat::TraceDat::open(&bytes[..]).unwrap();
        let mut events = dat.events(0);
        let mut n = 0;
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            each(&mut events, &mut |_| {
                n += 1;
                assert!(n < 100, "the visitor gives up");
            });
        }));
        assert!(caught.is_err());
        assert_eq!(n, 100);
    }
}
