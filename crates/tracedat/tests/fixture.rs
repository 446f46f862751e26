//! A real trace-cmd recording (fixtures/traces/tracedat): read whole, rewritten in every
//! version and compression rtlab writes and read back the same, cut and damaged without a
//! panic.

use tracedat::{Compression, Contents, Item, TraceDat};

fn fixture() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/traces/tracedat/cyclictest_2cpu_v7_zstd.dat"
    );
    std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every item: (CPU, time, record bytes), or a loss.
fn items(bytes: &[u8]) -> (Vec<(u32, u64, Vec<u8>)>, tracedat::ReadReport) {
    let dat = TraceDat::open(bytes).unwrap();
    let mut ev = dat.events(0);
    let mut out = Vec::new();
    while let Some(item) = ev.next() {
        match item {
            Item::Event(r) => out.push((r.cpu, r.ts, r.data.to_vec())),
            Item::Lost { cpu, ts, .. } => out.push((cpu, ts, Vec::new())),
        }
    }
    (out, ev.report().clone())
}

#[test]
fn trace_cmds_recording_reads_whole() {
    let bytes = fixture();
    let dat = TraceDat::open(&bytes[..]).unwrap();
    assert_eq!((dat.version, dat.compression), (7, Compression::Zstd));
    assert_eq!(dat.buffers.len(), 1);
    assert_eq!(dat.buffers[0].cpus.len(), 2);
    assert_eq!(dat.buffers[0].clock.as_deref(), Some("local"));
    assert!(dat.formats.find("sched", "sched_switch").is_some());
    assert_eq!(dat.symbols.len(), 22);
    assert_eq!(dat.comms.get(70), Some("kdamond.0"));
    assert!(dat.notes.is_empty(), "{:?}", dat.notes);
    let (items, report) = items(&bytes);
    // trace-cmd report -t prints 13,391 events, the first at 71976.680270543.
    assert_eq!(items.len(), 13_391);
    assert_eq!(items[0].1, 71_976_680_270_543);
    assert!(items.windows(2).all(|w| w[0].1 <= w[1].1), "time order");
    assert!(!report.damaged(), "{report:?}");
    assert_eq!(report.events, 13_391);
}

#[test]
fn every_version_and_compression_rtlab_writes_reads_back_the_same() {
    let bytes = fixture();
    let dat = TraceDat::open(&bytes[..]).unwrap();
    let contents = Contents::from_dat(&dat, 1 << 30).unwrap();
    let (want, _) = items(&bytes);
    let mut v6 = Vec::new();
    tracedat::write_v6(&contents, &mut v6).unwrap();
    assert_eq!(items(&v6).0, want, "version 6");
    for c in [Compression::None, Compression::Zlib, Compression::Zstd] {
        let mut v7 = Vec::new();
        tracedat::write_v7(&contents, c, &mut v7).unwrap();
        let again = TraceDat::open(&v7[..]).unwrap();
        assert_eq!(again.compression, c);
        assert_eq!(again.raw, dat.raw, "{c:?}: the metadata as it was");
        assert_eq!(items(&v7).0, want, "version 7 {c:?}");
    }
}

#[test]
fn a_cut_file_is_an_error_or_a_report_of_what_was_read() {
    let bytes = fixture();
    let (whole, _) = items(&bytes);
    for cut in (0..bytes.len()).step_by(997).chain([bytes.len() - 1]) {
        let part = &bytes[..cut];
        let Ok(dat) = TraceDat::open(part) else {
            continue;
        };
        let mut ev = dat.events(0);
        let mut n = 0;
        while ev.next().is_some() {
            n += 1;
        }
        assert!(n <= whole.len());
        if n < whole.len() {
            assert!(
                ev.report().damaged(),
                "cut at {cut}: {} of {} events and no word of it",
                n,
                whole.len()
            );
        }
    }
}

#[test]
fn damaged_bytes_never_panic() {
    let bytes = fixture();
    // Deterministic damage: a byte in every few hundred set to a pattern.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for round in 0..40 {
        let mut b = bytes.clone();
        for _ in 0..(8 + round * 4) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = (state % b.len() as u64) as usize;
            b[at] = (state >> 32) as u8;
        }
        if let Ok(dat) = TraceDat::open(&b[..]) {
            let mut ev = dat.events(0);
            let mut n = 0u64;
            while ev.next().is_some() {
                n += 1;
                assert!(n < 1_000_000, "round {round}: endless");
            }
        }
    }
}
