//! A streaming reader of text traces: one line buffer, reused, so a trace larger than memory
//! reads in constant space; and what the trace says about itself as it is read (events, lines
//! that did not parse, lost events, CPU buffers that started late).

use std::io::{self, BufRead};

use crate::line::{self, Line};

/// The longest line read whole. The kernel prints an event into one page (`trace_seq`), so
/// real lines are far shorter; a longer one is damage, read past and counted as malformed
/// rather than held in memory.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// How many lost-event markers and buffer starts are kept with their line numbers; the rest
/// are only counted, so a trace made of markers reads in constant space.
pub const MAX_MARKERS: usize = 1024;

/// What a reader met, line kinds counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Lines read.
    pub lines: u64,
    /// Event lines.
    pub events: u64,
    /// Lines that were neither events nor known markers (cut or corrupted lines).
    pub malformed: u64,
    /// The first malformed line: its 1-based number and text (up to 200 bytes).
    pub first_malformed: Option<(u64, String)>,
    /// Lost-events markers: (line, CPU, events) as printed; the first [`MAX_MARKERS`].
    pub lost: Vec<(u64, Option<u32>, Option<u64>)>,
    /// Lost-events markers in all.
    pub lost_markers: u64,
    /// Events the markers counted, added up (saturating at `u64::MAX`).
    pub lost_counted: u64,
    /// Whether a marker gave no count.
    pub lost_uncounted: bool,
    /// `##### CPU N buffer started ####` lines: (line, CPU); the first [`MAX_MARKERS`].
    pub buffer_starts: Vec<(u64, u32)>,
    /// Lines that were not valid UTF-8 (read as malformed).
    pub not_utf8: u64,
    /// Lines longer than [`MAX_LINE_BYTES`] (read past, counted as malformed).
    pub too_long: u64,
    /// What of a binary recording could not be read (damaged pages, a cut file), in words.
    pub damage: Option<String>,
}

impl ReadStats {
    /// Events lost in all, as far as the markers counted them; `None` when a marker gave no
    /// count.
    pub fn lost_events(&self) -> Option<u64> {
        (!self.lost_uncounted).then_some(self.lost_counted)
    }

    /// Whether anything suggests the trace is incomplete.
    pub fn incomplete(&self) -> bool {
        self.lost_markers > 0 || self.malformed > 0 || self.damage.is_some()
    }
}

/// Reads lines from `R` one at a time.
#[derive(Debug)]
pub struct Reader<R> {
    inner: R,
    buf: Vec<u8>,
    stats: ReadStats,
}

impl<R: BufRead> Reader<R> {
    /// A reader over `inner`.
    pub fn new(inner: R) -> Reader<R> {
        Reader {
            inner,
            buf: Vec::with_capacity(512),
            stats: ReadStats::default(),
        }
    }

    /// What was read so far.
    pub fn stats(&self) -> &ReadStats {
        &self.stats
    }

    /// The next line, classified, with its 1-based number; `None` at the end.
    pub fn next_line(&mut self) -> io::Result<Option<(u64, Line<'_>)>> {
        self.buf.clear();
        let (read, whole) = read_line(&mut self.inner, &mut self.buf)?;
        if read == 0 {
            return Ok(None);
        }
        let end = trimmed_end(&self.buf);
        let parsed = if !whole {
            self.stats.too_long += 1;
            Line::Malformed("")
        } else {
            match std::str::from_utf8(&self.buf[..end]) {
                Ok(text) => line::parse(text),
                Err(_) => {
                    self.stats.not_utf8 += 1;
                    Line::Malformed("")
                }
            }
        };
        Ok(Some(self.stats.account(parsed)))
    }

    /// The input read ahead and not yet taken (empty at the end): whole lines can be taken
    /// from it in place ([`Reader::take_line`]), sparing the copy of each into the line buffer.
    pub(crate) fn buffered(&mut self) -> io::Result<&[u8]> {
        loop {
            match self.inner.fill_buf() {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
                Ok(_) => break,
            }
        }
        // Filled: this returns what is held without reading again.
        self.inner.fill_buf()
    }

    /// Marks `n` bytes of [`Reader::buffered`] taken.
    pub(crate) fn consume(&mut self, n: usize) {
        self.inner.consume(n);
    }
}

impl<R> Reader<R> {
    /// A line taken from [`Reader::buffered`], held elsewhere (`text`, newline included, UTF-8
    /// checked), classified and counted as [`Reader::next_line`] does.
    pub(crate) fn take_line<'l>(&mut self, text: &'l str) -> (u64, Line<'l>) {
        let parsed = if text.len() > MAX_LINE_BYTES {
            self.stats.too_long += 1;
            Line::Malformed("")
        } else {
            line::parse(&text[..trimmed_end(text.as_bytes())])
        };
        self.stats.account(parsed)
    }
}

impl ReadStats {
    /// One more line, `parsed`: counted by its kind; its 1-based number.
    fn account<'l>(&mut self, parsed: Line<'l>) -> (u64, Line<'l>) {
        self.lines += 1;
        let n = self.lines;
        match parsed {
            Line::Event(_) => self.events += 1,
            Line::Malformed(text) => {
                self.malformed += 1;
                if self.first_malformed.is_none() {
                    let mut cut = text.len().min(200);
                    while !text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    self.first_malformed = Some((n, text[..cut].to_string()));
                }
            }
            Line::Lost { cpu, events } => {
                self.lost_markers += 1;
                match events {
                    Some(e) => self.lost_counted = self.lost_counted.saturating_add(e),
                    None => self.lost_uncounted = true,
                }
                if self.lost.len() < MAX_MARKERS {
                    self.lost.push((n, cpu, events));
                }
            }
            Line::BufferStarted { cpu } => {
                if self.buffer_starts.len() < MAX_MARKERS {
                    self.buffer_starts.push((n, cpu));
                }
            }
            Line::Comment | Line::Continuation(_) => {}
        }
        (n, parsed)
    }
}

/// The end of a line's text: its newline and carriage returns left out.
fn trimmed_end(b: &[u8]) -> usize {
    let mut end = b.len();
    while end > 0 && matches!(b[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    end
}

/// Reads one line into `buf` (newline included) as `read_until` does, but keeps at most
/// [`MAX_LINE_BYTES`] of it: the rest of a longer line is consumed and dropped. Returns the
/// bytes consumed and whether the line was kept whole.
fn read_line<R: BufRead>(inner: &mut R, buf: &mut Vec<u8>) -> io::Result<(usize, bool)> {
    let (mut read, mut whole) = (0usize, true);
    loop {
        let available = match inner.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok((read, whole));
        }
        let (used, done) = match memchr::memchr(b'\n', available) {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        if whole {
            let room = MAX_LINE_BYTES - buf.len();
            if used <= room {
                buf.extend_from_slice(&available[..used]);
            } else {
                buf.extend_from_slice(&available[..room]);
                whole = false;
            }
        }
        inner.consume(used);
        read += used;
        if done {
            return Ok((read, whole));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_what_it_meets() {
        let text = b"# tracer: nop\n\
            ##### CPU 1 buffer started ####\n\
            \x20 bash-1 [001] d..1. 1.000001: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120\r\n\
            CPU:0 [LOST 12 EVENTS]\n\
            \x20 bash-1 [001] d..1. 1.0000\n\
            \xff\xfe\n\
            \x20 bash-1 [001] d..1. 1.000002: irq_handler_exit: irq=1 ret=handled";
        let mut r = Reader::new(&text[..]);
        let mut events = Vec::new();
        while let Some((n, line)) = r.next_line().unwrap() {
            if let Line::Event(e) = line {
                events.push((n, e.ts_ns));
            }
        }
        assert_eq!(events, vec![(3, 1_000_001_000), (7, 1_000_002_000)]);
        let s = r.stats();
        assert_eq!((s.lines, s.events, s.malformed, s.not_utf8), (7, 2, 2, 1));
        assert_eq!(s.lost, vec![(4, Some(0), Some(12))]);
        assert_eq!(s.buffer_starts, vec![(2, 1)]);
        assert_eq!(
            s.first_malformed,
            Some((5, "  bash-1 [001] d..1. 1.0000".to_string()))
        );
        assert_eq!(s.lost_events(), Some(12));
        assert!(s.incomplete());
    }

    #[test]
    fn an_endless_line_is_read_past_in_bounded_memory() {
        let mut text = b"  a-1 [000] .... 1.000000: irq_handler_exit: irq=1 ret=handled\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', 3 * MAX_LINE_BYTES + 17));
        text.extend_from_slice(b"\n  a-1 [000] .... 2.000000: irq_handler_exit: irq=1 ret=handled");
        // A small buffer, so the long line arrives in many pieces.
        let mut r = Reader::new(std::io::BufReader::with_capacity(100, &text[..]));
        let mut events = 0;
        while let Some((_, line)) = r.next_line().unwrap() {
            events += usize::from(matches!(line, Line::Event(_)));
            assert!(r.buf.capacity() <= 2 * MAX_LINE_BYTES);
        }
        let s = r.stats();
        assert_eq!((events, s.lines, s.malformed, s.too_long), (2, 3, 1, 1));
    }

    #[test]
    fn markers_are_counted_past_the_kept_ones() {
        let mut text = String::new();
        for _ in 0..MAX_MARKERS + 5 {
            text.push_str(
                "CPU:0 [LOST 18446744073709551615 EVENTS]\n##### CPU 9 buffer started ####\n",
            );
        }
        text.push_str("CPU:1 [LOST EVENTS]\n");
        let mut r = Reader::new(text.as_bytes());
        while r.next_line().unwrap().is_some() {}
        let s = r.stats();
        assert_eq!(s.lost.len(), MAX_MARKERS);
        assert_eq!(s.buffer_starts.len(), MAX_MARKERS);
        assert_eq!(s.lost_markers, MAX_MARKERS as u64 + 6);
        assert_eq!(s.lost_counted, u64::MAX, "saturates, never wraps");
        assert_eq!(s.lost_events(), None, "one marker gave no count");
    }
}
