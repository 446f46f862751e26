//! A streaming reader of text traces: one line buffer, reused, so a trace larger than memory
//! reads in constant space; and what the trace says about itself as it is read (events, lines
//! that did not parse, lost events, CPU buffers that started late).

use std::io::{self, BufRead};

use crate::line::{self, Line};

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
    /// Lost-events markers: (line, CPU, events) as printed.
    pub lost: Vec<(u64, Option<u32>, Option<u64>)>,
    /// `##### CPU N buffer started ####` lines: (line, CPU).
    pub buffer_starts: Vec<(u64, u32)>,
    /// Lines that were not valid UTF-8 (read as malformed).
    pub not_utf8: u64,
}

impl ReadStats {
    /// Events lost in all, as far as the markers counted them; `None` when a marker gave no
    /// count.
    pub fn lost_events(&self) -> Option<u64> {
        self.lost.iter().map(|&(_, _, n)| n).sum()
    }

    /// Whether anything suggests the trace is incomplete.
    pub fn incomplete(&self) -> bool {
        !self.lost.is_empty() || self.malformed > 0
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
        if self.inner.read_until(b'\n', &mut self.buf)? == 0 {
            return Ok(None);
        }
        self.stats.lines += 1;
        let n = self.stats.lines;
        let mut end = self.buf.len();
        while end > 0 && matches!(self.buf[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        let parsed = match std::str::from_utf8(&self.buf[..end]) {
            Ok(text) => line::parse(text),
            Err(_) => {
                self.stats.not_utf8 += 1;
                Line::Malformed("")
            }
        };
        match parsed {
            Line::Event(_) => self.stats.events += 1,
            Line::Malformed(text) => {
                self.stats.malformed += 1;
                if self.stats.first_malformed.is_none() {
                    let mut cut = text.len().min(200);
                    while !text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    self.stats.first_malformed = Some((n, text[..cut].to_string()));
                }
            }
            Line::Lost { cpu, events } => self.stats.lost.push((n, cpu, events)),
            Line::BufferStarted { cpu } => self.stats.buffer_starts.push((n, cpu)),
            Line::Comment | Line::Continuation(_) => {}
        }
        Ok(Some((n, parsed)))
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
}
