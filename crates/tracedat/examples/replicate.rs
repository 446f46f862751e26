//! Builds a large recording from a small one for the benchmarks: `replicate IN OUT SIZE
//! [none|zstd]` writes IN's pages over and over, each copy's times shifted past the one
//! before (the pages' timestamps and the hrtimer events' expiry and now fields, so timer
//! wake-ups stay whole), until OUT's trace data holds SIZE bytes (`512M`, `1G`).

use std::fs::File;

use tracedat::page::{self, Step};
use tracedat::{Compression, Contents, TraceDat};

fn size_arg(text: &str) -> Option<u64> {
    let (num, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let mult = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    num.parse::<u64>().ok().map(|n| n * mult)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, output, size, rest @ ..] = &args[..] else {
        return Err("usage: replicate IN OUT SIZE [none|zstd]".into());
    };
    let size = size_arg(size).ok_or("SIZE: bytes with K, M or G")?;
    let dat = TraceDat::open(File::open(input)?)?;
    let base = Contents::from_dat(&dat, 1 << 32)?;
    let e = dat.endian;
    // Which fields of which records hold hrtimer-clock times.
    let mut times: Vec<(u16, usize, usize)> = Vec::new();
    for (name, fields) in [
        ("hrtimer_start", &["expires", "softexpires"][..]),
        ("hrtimer_expire_entry", &["now"][..]),
    ] {
        if let Some(f) = dat.formats.find("timer", name) {
            for field in fields {
                if let Some(x) = f.field(field) {
                    times.push((f.id as u16, usize::from(x.offset), usize::from(x.size)));
                }
            }
        }
    }
    // The span of one copy: first to last event, plus a millisecond.
    let (mut first, mut last) = (u64::MAX, 0);
    let mut ev = dat.events(0);
    while let Some(item) = ev.next() {
        if let tracedat::Item::Event(r) = item {
            first = first.min(r.ts);
            last = last.max(r.ts);
        }
    }
    let span = last.saturating_sub(first) + 1_000_000;
    let page_size = base.page_size as usize;
    let per_copy: u64 = base.cpus.iter().map(|(_, p)| p.len() as u64).sum();
    let copies = size.div_ceil(per_copy.max(1));
    let mut out = base.clone();
    for (i, (_, pages)) in out.cpus.iter_mut().enumerate() {
        let one = &base.cpus[i].1;
        pages.clear();
        pages.reserve(one.len() * copies as usize);
        for k in 0..copies {
            let mut copy = one.clone();
            shift(&mut copy, page_size, &dat.page_header, e, &times, k * span);
            pages.extend_from_slice(&copy);
        }
    }
    let compression = rest
        .first()
        .and_then(|c| Compression::from_name(c))
        .unwrap_or(Compression::None);
    let n = tracedat::write_v7(
        &out,
        compression,
        std::io::BufWriter::new(File::create(output)?),
    )?;
    eprintln!("{copies} copies, {n} bytes");
    Ok(())
}

/// Adds `by` to every page's timestamp and every hrtimer time field in `pages`.
fn shift(
    pages: &mut [u8],
    page_size: usize,
    h: &tracedat::PageHeader,
    e: tracedat::Endian,
    times: &[(u16, usize, usize)],
    by: u64,
) {
    for at in (0..pages.len()).step_by(page_size) {
        let Some(p) = page::page(pages, at, page_size.min(pages.len() - at), h, e) else {
            continue;
        };
        let ts = e.u64(&pages[at + h.ts_offset..]) + by;
        put(&mut pages[at + h.ts_offset..], ts, 8, e);
        let (mut pos, mut t) = (p.data, p.ts);
        let mut patches = Vec::new();
        while let Step::Event { start, len, next } = page::step(pages, pos, p.end, &mut t, e) {
            let id = e.u16(&pages[start..]);
            for &(tid, off, sz) in times {
                if tid == id && off + sz <= len {
                    patches.push((start + off, sz));
                }
            }
            pos = next;
        }
        for (off, sz) in patches {
            if let Some(v) = e.uint(&pages[off..], sz) {
                put(&mut pages[off..], v.wrapping_add(by), sz, e);
            }
        }
    }
}

fn put(b: &mut [u8], v: u64, size: usize, e: tracedat::Endian) {
    let mut tmp = Vec::new();
    e.put(&mut tmp, v, size);
    b[..size].copy_from_slice(&tmp);
}
