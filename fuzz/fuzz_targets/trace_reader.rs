//! Fuzz target `trace_reader`: arbitrary bytes through the streaming trace reader
//! (`trace::reader::Reader`, which calls `trace::line::parse` on each UTF-8 line), each event
//! decoded (`trace::event::decode`) and its fields split (`trace::event::Pairs`), as every
//! trace command reads a trace file or tracefs buffer; then through the two-thread text source
//! (`trace::source::Text`), which must count the same lines.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trace::event::{self, Pairs};
use trace::line::Line;
use trace::reader::Reader;
use trace::source::{Source, Text};

fuzz_target!(|data: &[u8]| {
    // A small buffer, so lines arrive in pieces as from a pipe.
    let mut reader = Reader::new(std::io::BufReader::with_capacity(97, data));
    while let Ok(Some((_, line))) = reader.next_line() {
        if let Line::Event(e) = line {
            let _ = event::decode(&e);
            let _ = e.flags;
            let pairs = Pairs::of(e.fields);
            let _ = pairs.get("prev_comm");
            let _ = event::value(e.fields, "next_pid");
        }
    }
    let stats = reader.stats().clone();
    let _ = (stats.lost_events(), stats.incomplete());
    // The same through the two-thread source, whose reading thread takes whole lines from
    // the buffered input in place: the same items counted.
    let mut text = Text::new(std::io::BufReader::with_capacity(97, data));
    let mut items = 0u64;
    if text.each(&mut |_| items += 1).is_ok() {
        assert_eq!(text.stats(), &stats);
        assert_eq!(items, stats.lines);
    }
    // The line parser directly, on the whole input as one line.
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = trace::line::parse(text);
    }
});
