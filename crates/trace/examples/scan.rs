//! Times the explanation's first pass over a trace file (text or trace.dat): `scan FILE`.
//! What `rtlab explain irqs` costs without the CLI around it, for profiling the reader.

use std::fs::File;
use std::io::BufReader;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: scan FILE")?;
    let start = Instant::now();
    let mut head = [0u8; 10];
    std::io::Read::read_exact(&mut File::open(&path)?, &mut head)?;
    let scan = if tracedat::is_trace_dat(&head) {
        let dat = tracedat::TraceDat::open(File::open(&path)?)?;
        trace::explain::scan_source(&mut trace::dat::Dat::new(&dat))?
    } else {
        trace::explain::scan(BufReader::with_capacity(1 << 20, File::open(&path)?))?
    };
    let secs = start.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(&path)?.len() as f64;
    println!(
        "{} events, {} wake-ups, {:.2} s, {:.0} MB/s, {:.0} ns/event",
        scan.read.events,
        scan.wakeup_count,
        secs,
        bytes / secs / 1e6,
        secs * 1e9 / scan.read.events.max(1) as f64
    );
    Ok(())
}
