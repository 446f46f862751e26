//! A text trace read on two threads: a reader thread takes whole lines out of what was read
//! ahead into a batch in one copy, checks their UTF-8 together, splits each into its columns
//! ([`crate::line`]) in place, and hands them over in batches; the thread
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
            Line::Event(e) => {
                let base = self.text.len();
                match base.checked_add(e.line.len()) {
                    Some(end) if u32::try_from(end).is_ok() => {
                        self.text.push_str(e.line);
                        columns(&e, base)
                    }
                    _ => Rec::Other,
                }
            }
            other => rec(other),
        };
        self.recs.push(rec);
    }

    /// Takes whole lines from the reader's buffered input into the batch (one copy of many
    /// lines, UTF-8 checked at once) and classifies them in place; a line that does not fit
    /// whole (the last of the buffered input, a line longer than the batch, one that is not
    /// UTF-8) goes through the line reader alone. Whether anything was left to read.
    fn fill<R: BufRead>(&mut self, reader: &mut Reader<R>) -> io::Result<bool> {
        let room = BATCH_TEXT.saturating_sub(self.text.len());
        let items = BATCH_ITEMS.saturating_sub(self.recs.len());
        let base = self.text.len();
        let available = reader.buffered()?;
        if available.is_empty() {
            return Ok(false);
        }
        let window = &available[..available.len().min(room)];
        let mut end = memchr::memrchr(b'\n', window).map_or(0, |i| i + 1);
        let text = match std::str::from_utf8(&window[..end]) {
            Ok(text) => text,
            Err(bad) => {
                end = memchr::memrchr(b'\n', &window[..bad.valid_up_to()]).map_or(0, |i| i + 1);
                std::str::from_utf8(&window[..end]).unwrap_or("")
            }
        };
        if end == 0 || items == 0 {
            match reader.next_line()? {
                Some((_, line)) => self.push(line),
                None => return Ok(false),
            }
            return Ok(true);
        }
        self.text.push_str(text);
        // Lines past the batch's count of items are left for the next batch.
        let mut at = base;
        let mut taken = 0;
        while at < self.text.len() && taken < items {
            let line_end = memchr::memchr(b'\n', &self.text.as_bytes()[at..])
                .map_or(self.text.len(), |i| at + i + 1);
            let (_, line) = reader.take_line(&self.text[at..line_end]);
            let rec = match line {
                Line::Event(e) => columns(&e, at),
                other => rec(other),
            };
            self.recs.push(rec);
            at = line_end;
            taken += 1;
        }
        self.text.truncate(at);
        reader.consume(at - base);
        Ok(true)
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

/// An event line held in a batch's text from `base` on: its columns, slices of the line, as
/// ranges of the text.
fn columns(e: &Event<'_>, base: usize) -> Rec {
    let end = base + e.line.len();
    // Each column is a slice of the line: its place is where it starts in the line.
    let at = |s: &str| -> Range {
        let from = (s.as_ptr() as usize).checked_sub(e.line.as_ptr() as usize);
        match from.filter(|&f| f + s.len() <= e.line.len()) {
            Some(f) => ((base + f) as u32, (base + f + s.len()) as u32),
            None => (0, 0),
        }
    };
    Rec::Event(Columns {
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

/// A line that is not an event, as a batch keeps it.
fn rec(line: Line<'_>) -> Rec {
    match line {
        Line::Lost { cpu, events } => Rec::Lost(cpu, events),
        Line::BufferStarted { cpu } => Rec::Started(cpu),
        Line::Event(_) | Line::Comment | Line::Continuation(_) | Line::Malformed(_) => Rec::Other,
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
        match batch.fill(reader) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                hand.send(batch);
                return Err(e);
            }
        }
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

    /// Every item of `input` as the line reader gives them, one at a time, and its counts.
    fn line_by_line(input: &[u8]) -> (Vec<String>, crate::reader::ReadStats) {
        let mut items = Vec::new();
        let mut reader = Reader::new(input);
        while let Some((_, line)) = reader.next_line().unwrap() {
            let mut b = Batch::default();
            b.push(line);
            b.visit(&mut |item| items.push(key(item)));
        }
        (items, reader.stats().clone())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Lines taken in place from the buffered input read as the line reader reads them:
        /// at any buffer size, with lines too long, not UTF-8, ended by `\r\n` or by nothing.
        #[test]
        fn lines_taken_in_place_read_as_one_at_a_time(
            pieces in proptest::collection::vec(0usize..7, 1..300),
            capacity in proptest::sample::select(vec![64usize, 4096, 1 << 20]),
            last_newline in proptest::bool::ANY,
        ) {
            let mut input = Vec::new();
            for (i, &p) in pieces.iter().enumerate() {
                match p {
                    0 => input.extend_from_slice(b"CPU:1 [LOST 3 EVENTS]\n"),
                    1 => input.extend(std::iter::repeat_n(b'x', crate::reader::MAX_LINE_BYTES + i % 3)),
                    2 => input.extend_from_slice(b"  a-1 [000] d..1. 1.000001: bad \xff\xfe utf8\n"),
                    3 => input.extend_from_slice(b"  a-1 [001] d..1. 2.000002: irq_handler_exit: irq=1 ret=handled\r\n"),
                    4 => input.extend_from_slice("  é-1 [001] d..1. 3.000003: softirq_raise: vec=9 [action=RCU]\n".as_bytes()),
                    5 => input.push(b'\n'),
                    _ => input.extend_from_slice(format!("  t-{i} [002] dNh2. 4.{i:06}: sched_waking: comm=rt pid={i} prio=9 target_cpu=001\n").as_bytes()),
                }
                if p == 1 {
                    input.push(b'\n');
                }
            }
            if !last_newline {
                input.pop();
            }
            let (alone, stats) = line_by_line(&input);
            let mut threaded = Vec::new();
            let mut reader = Reader::new(io::BufReader::with_capacity(capacity, &input[..]));
            each(&mut reader, &mut |item| threaded.push(key(item))).unwrap();
            proptest::prop_assert_eq!(threaded, alone);
            proptest::prop_assert_eq!(reader.stats(), &stats);
        }
    }

    /// Short lines fill a batch's count of items before its bytes: the lines past it are
    /// left for the next batch, none lost or read twice.
    #[test]
    fn short_lines_fill_batches_by_count() {
        let mut input = String::new();
        for i in 0..5 * BATCH_ITEMS {
            if i % 1000 == 0 {
                input.push_str(&format!(
                    "  t-{i} [002] dNh2. 4.{i:06}: sched_waking: comm=rt pid={i} prio=9 target_cpu=001\n"
                ));
            }
            input.push_str("#\n");
        }
        let (alone, stats) = line_by_line(input.as_bytes());
        let mut threaded = Vec::new();
        let mut reader = Reader::new(input.as_bytes());
        each(&mut reader, &mut |item| threaded.push(key(item))).unwrap();
        assert_eq!(threaded, alone);
        assert_eq!(reader.stats(), &stats);
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
