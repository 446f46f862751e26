//! A text trace read on two threads: a reader thread reads the lines, checks their UTF-8 and
//! splits each into its columns ([`crate::line`]), and hands them over in batches; the thread
//! that called [`Source::each`](super::Source::each) builds the items from a batch and visits
//! them (decoding the fields, the passes' own work). The two halves of the work are about equal
//! (`crates/trace/examples/layers.rs`), so a second core nearly halves the time of a pass.
//!
//! Items arrive in the order of the lines, and what the reader counted ([`ReadStats`]) is the
//! same as when one thread reads. Memory stays bounded: [`IN_FLIGHT`] batches of at most
//! [`BATCH_TEXT`] bytes of lines and [`BATCH_ITEMS`] items, reused.

use std::io::{self, BufRead};

use crate::handoff::{self, Hand};
use crate::line::{self, Event, Flags, Line};
use crate::reader::Reader;

use super::Item;

/// Bytes of event lines a batch holds before it is handed over (one longer line makes a batch
/// of its own, at most [`crate::reader::MAX_LINE_BYTES`]).
pub(super) const BATCH_TEXT: usize = 256 << 10;

/// Items a batch holds at most.
pub(super) const BATCH_ITEMS: usize = 4096;

/// Batches handed over and not yet visited, at most (besides the one being filled and the one
/// being visited).
pub(super) const IN_FLIGHT: usize = 2;

/// A byte range of a batch's text.
type Range = (u32, u32);

/// An event line's columns, as ranges of the batch's text.
#[derive(Clone, Copy, Debug)]
struct Columns {
    line: Range,
    task: Range,
    /// The name's range; `(0, 0)` with `named` for a name the line does not hold.
    name: Range,
    /// The function tracer's kernel lines have no name: the parser names them
    /// [`line::FUNCTION`].
    named: bool,
    fields: Range,
    pid: u32,
    cpu: u32,
    flags: Option<Flags>,
    ts_ns: u64,
    ts_digits: u8,
}

/// One line, classified, compactly: a batch holds thousands (an [`Item`] is larger).
#[derive(Clone, Copy, Debug)]
enum Rec {
    Event(Columns),
    /// [`Item::Lost`]: CPU, events.
    Lost(Option<u32>, Option<u64>),
    /// [`Item::BufferStarted`]: CPU.
    Started(u32),
    Other,
}

/// Lines read, handed over together.
#[derive(Default)]
struct Batch {
    text: String,
    recs: Vec<Rec>,
}

impl Batch {
    fn full(&self) -> bool {
        self.text.len() >= BATCH_TEXT || self.recs.len() >= BATCH_ITEMS
    }

    /// Adds one line. An event's line is copied; its columns, slices of it, become ranges.
    fn push(&mut self, line: Line<'_>) {
        let rec = match line {
            Line::Event(e) => match self.columns(&e) {
                Some(c) => Rec::Event(c),
                None => Rec::Other,
            },
            Line::Lost { cpu, events } => Rec::Lost(cpu, events),
            Line::BufferStarted { cpu } => Rec::Started(cpu),
            Line::Comment | Line::Continuation(_) | Line::Malformed(_) => Rec::Other,
        };
        self.recs.push(rec);
    }

    fn columns(&mut self, e: &Event<'_>) -> Option<Columns> {
        let base = self.text.len();
        let end = base.checked_add(e.line.len())?;
        u32::try_from(end).ok()?;
        self.text.push_str(e.line);
        // Each column is a slice of the line: its place is where it starts in the line.
        let at = |s: &str| -> Range {
            let from = (s.as_ptr() as usize).checked_sub(e.line.as_ptr() as usize);
            match from.filter(|&f| f + s.len() <= e.line.len()) {
                Some(f) => ((base + f) as u32, (base + f + s.len()) as u32),
                None => (0, 0),
            }
        };
        Some(Columns {
            line: (base as u32, end as u32),
            task: at(e.task),
            name: at(e.name),
            named: std::ptr::eq(e.name, line::FUNCTION),
            fields: at(e.fields),
            pid: e.pid,
            cpu: e.cpu,
            flags: e.flags,
            ts_ns: e.ts_ns,
            ts_digits: e.ts_digits,
        })
    }

    fn clear(&mut self) {
        self.text.clear();
        self.recs.clear();
    }

    /// Visits the batch's items in order.
    fn visit(&self, visit: &mut dyn FnMut(Item<'_>)) {
        let text = self.text.as_str();
        let get = |(a, b): Range| text.get(a as usize..b as usize).unwrap_or("");
        for rec in &self.recs {
            visit(match *rec {
                Rec::Event(c) => Item::Event(
                    Event {
                        task: get(c.task),
                        pid: c.pid,
                        cpu: c.cpu,
                        flags: c.flags,
                        ts_ns: c.ts_ns,
                        ts_digits: c.ts_digits,
                        name: if c.named { line::FUNCTION } else { get(c.name) },
                        fields: get(c.fields),
                        line: get(c.line),
                    },
                    None,
                ),
                Rec::Lost(cpu, events) => Item::Lost { cpu, events },
                Rec::Started(cpu) => Item::BufferStarted { cpu },
                Rec::Other => Item::Other,
            });
        }
    }
}

/// Reads every line of `reader` on a second thread and visits the items here, in order (on
/// this thread alone when no thread can be started).
pub(super) fn each<R: BufRead + Send>(
    reader: &mut Reader<R>,
    visit: &mut dyn FnMut(Item<'_>),
) -> io::Result<()> {
    let r = &mut *reader;
    let produced = handoff::run(IN_FLIGHT, move |hand| read(r, hand), &mut |b: &Batch| {
        b.visit(visit);
    });
    if let Some(result) = produced {
        return result;
    }
    let mut batch = Batch::default();
    while let Some((_, line)) = reader.next_line()? {
        batch.clear();
        batch.push(line);
        batch.visit(visit);
    }
    Ok(())
}

/// The reader thread: lines into batches, handed over when full and at the end; what was read
/// before an error is handed over before it.
fn read<R: BufRead>(reader: &mut Reader<R>, hand: &Hand<'_, Batch>) -> io::Result<()> {
    let fresh = || {
        let mut b = hand.fresh();
        b.clear();
        b
    };
    let mut batch = fresh();
    loop {
        let line = match reader.next_line() {
            Ok(Some((_, line))) => line,
            Ok(None) => break,
            Err(e) => {
                hand.send(batch);
                return Err(e);
            }
        };
        batch.push(line);
        if batch.full() {
            if !hand.send(batch) {
                return Ok(()); // the visiting side is gone (it panicked)
            }
            batch = fresh();
        }
    }
    if !batch.recs.is_empty() {
        hand.send(batch);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each item in a comparable form.
    fn key(item: Item<'_>) -> String {
        format!("{item:?}")
    }

    /// A trace of every kind of line, longer than several batches.
    fn trace() -> String {
        let mut text = String::from("# tracer: nop\n");
        for i in 0..3 * BATCH_ITEMS {
            let s = i / 1_000_000;
            let us = i % 1_000_000;
            match i % 7 {
                0 => text.push_str("CPU:1 [LOST 3 EVENTS]\n"),
                1 => text.push_str("##### CPU 2 buffer started ####\n"),
                2 => text.push_str(" => some_function\n"),
                3 => text.push_str("  cut-1 [000] d..1. 1.0\n"),
                _ => text.push_str(&format!(
                    "  task name-{i} [00{}] d.h2. {s}.{us:06}: sched_waking: comm=rt pid={i} prio=9 target_cpu=001\n",
                    i % 4
                )),
            }
        }
        text
    }

    #[test]
    fn the_items_and_counts_are_one_threads() {
        let text = trace();
        let mut alone = Vec::new();
        let mut reader = Reader::new(text.as_bytes());
        while let Some((_, line)) = reader.next_line().unwrap() {
            let mut b = Batch::default();
            b.push(line);
            b.visit(&mut |item| alone.push(key(item)));
        }
        let mut threaded = Vec::new();
        let mut source = Reader::new(text.as_bytes());
        each(&mut source, &mut |item| threaded.push(key(item))).unwrap();
        assert!(alone.len() > 2 * BATCH_ITEMS);
        assert_eq!(threaded, alone);
        assert_eq!(source.stats(), reader.stats());
        assert!(alone[5].contains("task name") && alone[5].contains("sched_waking"));
    }

    /// Found in the lab: the kernel's function-tracer lines have no name in the line, and the
    /// batch gave them an empty one.
    #[test]
    fn a_line_named_by_the_parser_keeps_its_name() {
        let text = "          <idle>-0       [001] d.h1.   290.830520: hrtimer_wakeup <-__hrtimer_run_queues\n";
        let mut names = Vec::new();
        each(&mut Reader::new(text.as_bytes()), &mut |item| {
            if let Item::Event(e, _) = item {
                names.push((e.name.to_string(), e.fields.to_string()));
            }
        })
        .unwrap();
        assert_eq!(
            names,
            [(
                "function".to_string(),
                "hrtimer_wakeup <-__hrtimer_run_queues".to_string()
            )]
        );
    }

    /// Gives `ok` bytes, then fails.
    struct Failing<'a> {
        text: &'a [u8],
        ok: usize,
    }

    impl io::Read for Failing<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.ok == 0 {
                return Err(io::Error::other("the disk went away"));
            }
            let n = buf.len().min(self.ok).min(self.text.len());
            buf[..n].copy_from_slice(&self.text[..n]);
            (self.text, self.ok) = (&self.text[n..], self.ok - n);
            Ok(n)
        }
    }

    #[test]
    fn a_read_error_comes_after_the_lines_read_before_it() {
        let text = trace();
        let ok = text.len() / 2;
        let whole_lines = text[..ok].matches('\n').count();
        let input = io::BufReader::with_capacity(
            4096,
            Failing {
                text: text.as_bytes(),
                ok,
            },
        );
        let mut reader = Reader::new(input);
        let mut seen = 0;
        let err = each(&mut reader, &mut |_| seen += 1).unwrap_err();
        assert_eq!(err.to_string(), "the disk went away");
        assert_eq!(seen, whole_lines);
    }

    #[test]
    fn a_visitor_that_panics_stops_the_reader() {
        let text = trace();
        let mut reader = Reader::new(text.as_bytes());
        let mut n = 0;
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = each(&mut reader, &mut |_| {
                n += 1;
                assert!(n < 100, "the visitor gives up");
            });
        }));
        assert!(caught.is_err());
        assert_eq!(n, 100);
    }
}
