//! A trace-cmd recording explained from the binary file and from trace-cmd's report of it: the
//! same wake-ups, handlers, task delays and spikes (the recording's records carry the context
//! flags the report leaves out, which only adds what interrupts were doing).

use std::io::Read;

use trace::explain::{self, Scan};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../fixtures/traces/tracedat/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn report_text() -> Vec<u8> {
    unpacked("cyclictest_2cpu_report.txt.zst")
}

fn unpacked(name: &str) -> Vec<u8> {
    let packed = fixture(name);
    let mut out = Vec::new();
    ruzstd::decoding::StreamingDecoder::new(&packed[..])
        .unwrap()
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn scans() -> (Scan, Scan) {
    let bytes = fixture("cyclictest_2cpu_v7_zstd.dat");
    let dat = tracedat::TraceDat::open(&bytes[..]).unwrap();
    let binary = explain::scan_source(&mut trace::dat::Dat::new(&dat)).unwrap();
    let text = explain::scan(&report_text()[..]).unwrap();
    (binary, text)
}

#[test]
fn the_recording_and_its_report_scan_alike() {
    let (b, t) = scans();
    assert_eq!(b.read.events, 13_391);
    assert_eq!(b.read.events, t.read.events);
    assert_eq!((b.read.malformed, b.read.damage.clone()), (0, None));
    assert_eq!(b.wakeup_count, 1264);
    assert_eq!(b.wakeup_count, t.wakeup_count);
    assert_eq!(b.wakeups, t.wakeups);
    assert_eq!(b.clock_offset_ns, t.clock_offset_ns);
    assert_eq!(b.handlers, t.handlers);
    assert_eq!(b.tasks, t.tasks);
    assert_eq!(b.rt_histograms, t.rt_histograms);
    assert_eq!(b.cpus, t.cpus);
    assert!(
        b.has_flags && !t.has_flags,
        "the report has no flags column"
    );
    let worst = &b.worst(1)[0];
    assert_eq!((worst.cpu, worst.comm.as_str()), (0, "cyclictest"));
    // With the clock offset of the 50 ms around it (302,337 ns with the trace's smallest).
    assert_eq!(worst.latency_ns(b.clock_offset_ns), 302_161);
}

/// `trace-cmd report -l` (the latency format: no CPU column, the CPU run into the flags, the
/// task cut to 8 characters) reads as the plain report does.
#[test]
fn the_report_in_the_latency_format_scans_as_the_plain_one() {
    let (b, t) = scans();
    let l = explain::scan(&unpacked("cyclictest_2cpu_report_l.txt.zst")[..]).unwrap();
    assert_eq!((l.read.events, l.read.malformed), (t.read.events, 0));
    assert_eq!(l.wakeup_count, t.wakeup_count);
    assert!(l.has_flags, "the latency format has the flags");
    // Microseconds: the same handlers, as often.
    let counts = |s: &Scan| {
        s.handlers
            .iter()
            .map(|(name, h)| (name.clone(), h.count))
            .collect::<Vec<_>>()
    };
    assert_eq!(counts(&l), counts(&b));
    // The same worst wake-ups, to the microsecond the latency format keeps.
    let (lw, tw) = (l.worst(8), t.worst(8));
    assert_eq!(lw.len(), 8);
    for (x, y) in lw.iter().zip(&tw) {
        assert_eq!((x.cpu, x.pid), (y.cpu, y.pid));
        let (a, b) = (
            x.latency_ns(l.clock_offset_ns),
            y.latency_ns(t.clock_offset_ns),
        );
        assert!(a.abs_diff(b) <= 1_000, "{a} ns against {b} ns");
    }
}

#[test]
fn the_recording_and_its_report_explain_alike() {
    let (b, t) = scans();
    let specs: Vec<_> = b
        .worst(4)
        .iter()
        .map(|w| w.window_spec(b.clock_offset_ns))
        .collect();
    let bytes = fixture("cyclictest_2cpu_v7_zstd.dat");
    let dat = tracedat::TraceDat::open(&bytes[..]).unwrap();
    let bw = explain::collect_source(&mut trace::dat::Dat::new(&dat), &specs, false).unwrap();
    let tw = explain::collect(&report_text()[..], &specs, false).unwrap();
    for ((w, bwin), twin) in b.worst(4).iter().zip(&bw).zip(&tw) {
        assert_eq!(bwin.events.len(), twin.events.len());
        let spike = w.spike(b.clock_offset_ns);
        let x = explain::explain(bwin, &spike, w.offset(b.clock_offset_ns));
        let y = explain::explain(twin, &spike, w.offset(t.clock_offset_ns));
        assert_eq!(x.latency_ns, y.latency_ns);
        assert_eq!(x.milestones, y.milestones);
        assert_eq!(x.culprit, y.culprit);
        let parts = |e: &model::explain::Explanation| -> Vec<(model::explain::PartKind, u64)> {
            e.parts.iter().map(|p| (p.kind, p.duration_ns)).collect()
        };
        assert_eq!(parts(&x), parts(&y));
    }
}

#[test]
fn a_recordings_windows_render_lines_that_read_back_as_the_same_events() {
    let bytes = fixture("cyclictest_2cpu_v7_zstd.dat");
    let dat = tracedat::TraceDat::open(&bytes[..]).unwrap();
    let b = explain::scan_source(&mut trace::dat::Dat::new(&dat)).unwrap();
    let specs: Vec<_> = b
        .worst(2)
        .iter()
        .map(|w| w.window_spec(b.clock_offset_ns))
        .collect();
    let windows = explain::collect_source(&mut trace::dat::Dat::new(&dat), &specs, true).unwrap();
    for w in &windows {
        assert!(!w.text.is_empty());
        let spec = explain::WindowSpec {
            cpu: w.cpu,
            from_ts: w.from_ts,
            to_ts: w.to_ts,
        };
        let again = explain::collect(w.text.as_bytes(), &[spec], false).unwrap();
        // The lines give microseconds rounded as the kernel's text does.
        let whats = |evs: &[explain::Ev], half: u64| -> Vec<(u64, u32, explain::What)> {
            evs.iter()
                .map(|e| ((e.ts_ns + half) / 1000, e.cpu, e.what.clone()))
                .collect()
        };
        assert_eq!(whats(&again[0].events, 0), whats(&w.events, 500));
    }
}

/// trace-cmd's recording of the timerlat tracer (with the osnoise events and switches) reads as
/// its report text does: the same per-CPU latencies and the same auto-analysis of each CPU's
/// worst activation.
#[test]
fn a_timerlat_recording_reads_as_its_report_text() {
    use trace::dat::tracer::{self, Tracer};
    let bytes = fixture("timerlat_osnoise_2cpu_v7_zstd.dat");
    let dat = tracedat::TraceDat::open(&bytes[..]).unwrap();
    assert_eq!(tracer::probe(&dat), Some(Tracer::Timerlat));
    let from_dat = tracer::timerlat(&dat).unwrap();
    let text = String::from_utf8(unpacked("timerlat_osnoise_2cpu_v7_zstd.report.txt.zst")).unwrap();
    assert!(trace::timerlat::detect(&text));
    let from_text = trace::timerlat::parse(&text).unwrap();
    assert_eq!(from_dat, from_text);
    let (irq0, thread0) = from_dat.cpus[&0];
    assert_eq!((irq0.count, thread0.count), (203, 203));
    assert_eq!((thread0.max_ns, thread0.max_id), (3_012_526, 7));
    assert_eq!(from_dat.analyses.len(), 2);
    // A recording of events only is no tracer's.
    let events = fixture("cyclictest_2cpu_v7_zstd.dat");
    assert_eq!(
        tracer::probe(&tracedat::TraceDat::open(&events[..]).unwrap()),
        None
    );
}

/// trace-cmd's recording of the hwlat tracer reads as its report text does (the samples, the
/// CPU count), and as the tracer's own text would: `#N inner/outer(us): I/O ts:S.NS`.
#[test]
fn a_hwlat_recording_reads_as_its_report_text() {
    use trace::dat::tracer::{self, Tracer};
    let bytes = fixture("hwlat_2cpu_v7_zstd.dat");
    let dat = tracedat::TraceDat::open(&bytes[..]).unwrap();
    assert_eq!(tracer::probe(&dat), Some(Tracer::Hwlat));
    let from_dat = tracer::hwlat(&dat).unwrap();
    let text = String::from_utf8(fixture("hwlat_2cpu_v7_zstd.report.txt")).unwrap();
    assert!(trace::hwlat::detect(&text));
    assert_eq!(from_dat, trace::hwlat::parse(&text).unwrap());
    assert_eq!((from_dat.samples.len(), from_dat.cpus), (4, 2));
    let worst = from_dat.worst().unwrap();
    assert_eq!((worst.seq, worst.cpu, worst.outer_us), (4, 0, 3920));
    assert_eq!(worst.wall_ts, "1795816735.049675808");
    let rendered = tracer::hwlat_text(&dat).unwrap();
    assert!(
        rendered.contains("#4     inner/outer(us): 1964/3920  ts:1795816735.049675808 count:522"),
        "{rendered}"
    );
}

/// trace-cmd's recordings of the function tracers beside the scheduler's events (the lab's
/// `tracedat-functions` scenario on 6.12-rt): each explains as its `report -t` text does, to the
/// functions each part lists, and the parts name the kernel functions called in them.
#[test]
fn function_tracer_recordings_explain_as_their_text_with_the_functions() {
    for (dat_name, text_name) in [
        (
            "function_graph_2cpu_v7_zstd.dat",
            "function_graph_2cpu_report.txt.zst",
        ),
        ("function_2cpu_v7_zstd.dat", "function_2cpu_report.txt.zst"),
    ] {
        let bytes = fixture(dat_name);
        let dat = tracedat::TraceDat::open(&bytes[..]).unwrap();
        let text = unpacked(text_name);
        let b = explain::scan_source(&mut trace::dat::Dat::new(&dat)).unwrap();
        let t = explain::scan(&text[..]).unwrap();
        // trace-cmd prints a call and its return that follow each other as one leaf line.
        assert!(b.read.events >= t.read.events, "{dat_name}");
        assert_eq!((b.read.malformed, t.read.malformed), (0, 0), "{dat_name}");
        assert_eq!(b.wakeups, t.wakeups, "{dat_name}");
        let specs: Vec<_> = b
            .worst(3)
            .iter()
            .map(|w| w.window_spec(b.clock_offset_ns))
            .collect();
        let bw = explain::collect_source(&mut trace::dat::Dat::new(&dat), &specs, false).unwrap();
        let tw = explain::collect(&text[..], &specs, false).unwrap();
        let mut named = 0;
        for ((w, bwin), twin) in b.worst(3).iter().zip(&bw).zip(&tw) {
            let spike = w.spike(b.clock_offset_ns);
            let x = explain::explain(bwin, &spike, w.offset(b.clock_offset_ns));
            let y = explain::explain(twin, &spike, w.offset(t.clock_offset_ns));
            assert_eq!(x.parts, y.parts, "{dat_name}");
            named += x.parts.iter().filter(|p| p.functions.is_some()).count();
        }
        assert!(named > 0, "{dat_name}: no part names a function");
    }
}
