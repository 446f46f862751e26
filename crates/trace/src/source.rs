//! Where events come from: a text trace read line by line, or a trace-cmd recording decoded
//! from binary ([`crate::dat`]). The passes over a trace ([`crate::explain`]) take any
//! [`Source`], so a trace.dat is explained by the same code as its `trace-cmd report` text.

use std::io::{self, BufRead};

use crate::event::{self, Kind};
use crate::line::Event;
use crate::reader::{ReadStats, Reader};

mod batch;

/// One thing a source yields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item<'a> {
    /// An event, with what it decodes to when the source decoded it already (binary
    /// records); `None` for text, decoded on demand with [`Item::kind`].
    Event(Event<'a>, Option<Kind<'a>>),
    /// Events were lost on `cpu` (when known), `events` of them (when counted).
    Lost {
        /// The CPU.
        cpu: Option<u32>,
        /// How many.
        events: Option<u64>,
    },
    /// `cpu`'s buffer starts here: its older events were overwritten.
    BufferStarted {
        /// The CPU.
        cpu: u32,
    },
    /// Something else: a comment, a continuation, a line that did not read (counted in the
    /// source's [`ReadStats`]).
    Other,
}

/// An event's decoded kind: the source's, or decoded from its text.
#[inline]
pub fn kind<'a>(event: &Event<'a>, decoded: Option<Kind<'a>>) -> Kind<'a> {
    decoded.unwrap_or_else(|| event::decode(event))
}

/// A stream of events in trace order.
pub trait Source {
    /// Hands every item, in trace order, to `visit` (a visitor rather than an iterator: the
    /// item is built where it is used, not moved through each layer). Dynamic, so each pass
    /// over a trace is compiled once for every kind of source.
    fn each(&mut self, visit: &mut dyn FnMut(Item<'_>)) -> io::Result<()>;

    /// What was read so far.
    fn stats(&self) -> &ReadStats;

    /// Whether events should carry their line as text (`Event::line`): a binary source renders
    /// it only when asked (the windows of a run's own capture keep it).
    fn keep_lines(&mut self, _yes: bool) {}
}

/// A text trace (the kernel's, or `trace-cmd report` output).
#[derive(Debug)]
pub struct Text<R> {
    reader: Reader<R>,
}

impl<R: BufRead> Text<R> {
    /// Reads `input`.
    pub fn new(input: R) -> Text<R> {
        Text {
            reader: Reader::new(input),
        }
    }
}

impl<R: BufRead + Send> Source for Text<R> {
    /// The lines are read and split on a second thread ([`batch`]), visited here in order.
    fn each(&mut self, visit: &mut dyn FnMut(Item<'_>)) -> io::Result<()> {
        batch::each(&mut self.reader, visit)
    }

    fn stats(&self) -> &ReadStats {
        self.reader.stats()
    }
}
