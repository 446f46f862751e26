//! Times the layers under the explanation's scan, each alone: `layers FILE [LAYER]`. For a
//! trace.dat: `stream` (the raw records in time order), `decode` (the records decoded into
//! events), `scan` (the whole first pass); for text: `decode` (lines parsed) and `scan`.
//! Under `valgrind --tool=cachegrind` the instruction counts of one layer are repeatable where
//! wall times on a shared machine are not. Text is read from memory (as `rtlab` reads a
//! mapped file); a trace.dat with `pread`.

use std::fs::File;
use std::time::Instant;

use trace::source::{Item, Source};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: layers FILE [LAYER]")?;
    let only = std::env::args().nth(2).unwrap_or_default();
    let run = |name: &str| only.is_empty() || only == name;
    let mut head = [0u8; 10];
    std::io::Read::read_exact(&mut File::open(&path)?, &mut head)?;
    // Text is read from memory, as `rtlab` reads a mapped file: the pass without the copies
    // of `read(2)` (held whole: for files that fit in memory).
    let bytes = std::fs::read(&path)?;
    let text = || -> std::io::Result<trace::source::Text<&[u8]>> {
        Ok(trace::source::Text::new(&bytes[..]))
    };
    let dat = if tracedat::is_trace_dat(&head) {
        Some(tracedat::TraceDat::open(File::open(&path)?)?)
    } else {
        None
    };
    if let Some(dat) = &dat
        && run("stream")
    {
        let t = Instant::now();
        let (mut n, mut sum) = (0u64, 0u64);
        let mut ev = dat.events_merged();
        while let Some(item) = ev.next() {
            if let tracedat::Item::Event(r) = item {
                n += 1;
                sum = sum.wrapping_add(r.ts ^ r.data.len() as u64);
            }
        }
        println!(
            "stream: {n} records {:.2} s ({sum})",
            t.elapsed().as_secs_f64()
        );
    }
    if run("decode") {
        let t = Instant::now();
        let mut n = 0u64;
        let mut visit = |item: Item<'_>| {
            if let Item::Event(e, k) = item {
                n += u64::from(e.pid) + u64::from(k.is_some());
            }
        };
        match &dat {
            Some(dat) => trace::dat::Dat::new(dat).each(&mut visit)?,
            None => text()?.each(&mut visit)?,
        }
        println!("decode: {n} {:.2} s", t.elapsed().as_secs_f64());
    }
    if run("scan") {
        let t = Instant::now();
        let scan = match &dat {
            Some(dat) => trace::explain::scan_source(&mut trace::dat::Dat::new(dat))?,
            None => trace::explain::scan_source(&mut text()?)?,
        };
        println!(
            "scan: {} events {} wake-ups {:.2} s",
            scan.read.events,
            scan.wakeup_count,
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
