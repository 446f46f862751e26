//! Prints each event of a trace.dat as `CPU TIMESTAMP NAME PID`, and what reading met: the
//! reader's view, to set beside `trace-cmd report`.

use std::fs::File;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: dump TRACE.DAT")?;
    let dat = tracedat::TraceDat::open(File::open(path)?)?;
    eprintln!(
        "version {} {:?} long {} page {} {:?} formats {} symbols {} comms {} buffers {:?} notes {:?}",
        dat.version,
        dat.endian,
        dat.long_size,
        dat.host_page_size,
        dat.compression,
        dat.formats.all().len(),
        dat.symbols.len(),
        dat.comms.len(),
        dat.buffers,
        dat.notes
    );
    let mut events = dat.events(0);
    while let Some(item) = events.next() {
        match item {
            tracedat::Item::Event(r) => {
                let id = dat.endian.u16(r.data);
                let f = dat.formats.get(u32::from(id));
                let name = f.map_or("?", |f| f.name.as_str());
                let pid = f
                    .and_then(|f| f.field("common_pid"))
                    .and_then(|p| p.int(r.data, dat.endian))
                    .unwrap_or(-1);
                println!(
                    "{} {}.{:09} {} {}",
                    r.cpu,
                    r.ts / 1_000_000_000,
                    r.ts % 1_000_000_000,
                    name,
                    pid
                );
            }
            tracedat::Item::Lost { cpu, ts, count } => println!("{cpu} {ts} LOST {count:?}"),
        }
    }
    eprintln!("{:?}", events.report());
    Ok(())
}
