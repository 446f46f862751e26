//! Fuzz target `tracedat_explain`: arbitrary bytes as a trace-cmd recording (trace.dat):
//! `tracedat::TraceDat::open`, the merged event stream, `trace::dat::Dat` decoding every record
//! by the file's formats through the explanation's first pass and its windows (lines rendered),
//! the tracers' entries read as their text (timerlat, hwlat) and a latency tracer's text, and the
//! writer rewriting what was read. Nothing may panic, loop or allocate past the bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trace::explain;

fuzz_target!(|data: &[u8]| {
    let Ok(dat) = tracedat::TraceDat::open(data) else {
        return;
    };
    let _ = dat.latency_text(1 << 20);
    // As `explain` does: a tracer's reading only where its entries are.
    match trace::dat::tracer::probe(&dat) {
        Some(trace::dat::tracer::Tracer::Timerlat) => {
            let _ = trace::dat::tracer::timerlat(&dat);
        }
        Some(trace::dat::tracer::Tracer::Hwlat) => {
            let _ = trace::dat::tracer::hwlat(&dat);
        }
        None => {}
    }
    let Ok(scan) = explain::scan_source(&mut trace::dat::Dat::new(&dat)) else {
        return;
    };
    let specs: Vec<_> = scan
        .worst(2)
        .iter()
        .map(|w| w.window_spec(scan.clock_offset_ns))
        .collect();
    if let Ok(windows) = explain::collect_source(&mut trace::dat::Dat::new(&dat), &specs, true) {
        for (w, win) in scan.worst(2).iter().zip(&windows) {
            let _ = explain::explain(win, &w.spike(scan.clock_offset_ns), scan.clock_offset_ns);
        }
    }
    if let Ok(contents) = tracedat::Contents::from_dat(&dat, 1 << 20) {
        let mut out = Vec::new();
        let _ = tracedat::write_v7(&contents, tracedat::Compression::None, &mut out);
        assert!(tracedat::TraceDat::open(&out[..]).is_ok(), "rtlab's own file reads");
    }
});
