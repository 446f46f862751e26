//! Recordings built here, in either byte order and for a 32-bit kernel: the page header, the
//! event headers (extends, padding, long events) and the fields read as the formats say.

use tracedat::{Compression, Contents, Endian, Item, TraceDat};

const FORMAT: &str = "name: sample\nID: 7\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:u64 value;\toffset:8;\tsize:8;\tsigned:0;\n\
\tfield:__data_loc char[] name;\toffset:16;\tsize:4;\tsigned:0;\n\n\
print fmt: \"value=%llu name=%s\", REC->value, __get_str(name)\n";

fn header_page(long: usize) -> String {
    let data = 8 + long;
    format!(
        "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
         \tfield: local_t commit;\toffset:8;\tsize:{long};\tsigned:1;\n\
         \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
         \tfield: char data;\toffset:{data};\tsize:{};\tsigned:0;\n",
        4096 - data
    )
}

/// A record of `sample`: pid, value, name.
fn record(e: Endian, pid: i32, value: u64, name: &str) -> Vec<u8> {
    let mut r = Vec::new();
    e.put(&mut r, 7, 2);
    r.extend_from_slice(&[0x01, 0x02]);
    e.put(&mut r, pid as u32 as u64, 4);
    e.put(&mut r, value, 8);
    let loc = ((name.len() as u64 + 1) << 16) | 20;
    e.put(&mut r, loc, 4);
    r.extend_from_slice(name.as_bytes());
    r.push(0);
    while r.len() % 4 != 0 {
        r.push(0);
    }
    r
}

/// An event header word.
fn head(e: Endian, type_len: u32, delta: u32) -> u64 {
    u64::from(match e {
        Endian::Little => type_len | (delta << 5),
        Endian::Big => (type_len << 27) | delta,
    })
}

/// One page: a short event, a time extend, a long (type 0) event, padding, another event.
fn page(e: Endian, long: usize, ts: u64) -> Vec<u8> {
    let mut data = Vec::new();
    let r1 = record(e, 10, 1, "a");
    e.put(&mut data, head(e, (r1.len() / 4) as u32, 100), 4);
    data.extend_from_slice(&r1);
    e.put(&mut data, head(e, 30, 5), 4);
    e.put(&mut data, 1, 4); // extend: (1 << 27) + 5
    let r2 = record(
        e,
        11,
        u64::MAX,
        "a longer name for a long event, past 28 words of record data and more",
    );
    e.put(&mut data, head(e, 0, 7), 4);
    e.put(&mut data, r2.len() as u64 + 4, 4);
    data.extend_from_slice(&r2);
    e.put(&mut data, head(e, 29, 3), 4);
    e.put(&mut data, 8, 4);
    data.extend_from_slice(&[0; 4]);
    let r3 = record(e, -1, 3, "");
    e.put(&mut data, head(e, (r3.len() / 4) as u32, 9), 4);
    data.extend_from_slice(&r3);
    let mut p = Vec::new();
    e.put(&mut p, ts, 8);
    e.put(&mut p, data.len() as u64, long);
    p.extend_from_slice(&data);
    p.resize(4096, 0);
    p
}

fn contents(e: Endian, long: usize) -> Contents {
    Contents {
        endian: e,
        long_size: long as u8,
        host_page_size: 4096,
        header_page: header_page(long).into_bytes(),
        header_event: b"# compressed entry header\n".to_vec(),
        systems: vec![("test".to_string(), vec![FORMAT.as_bytes().to_vec()])],
        cmdlines: b"10 ten\n11 eleven\n".to_vec(),
        clock: "mono".to_string(),
        cpu_count: 2,
        page_size: 4096,
        cpus: vec![(0, page(e, long, 1000)), (1, page(e, long, 1050))],
        ..Contents::default()
    }
}

/// (CPU, time, pid, value, name) of every event.
fn read(bytes: &[u8]) -> Vec<(u32, u64, i64, u64, String)> {
    let dat = TraceDat::open(bytes).unwrap();
    let f = dat.formats.get(7).unwrap();
    let (pid, value, name) = (
        f.field("common_pid").unwrap(),
        f.field("value").unwrap(),
        f.field("name").unwrap(),
    );
    let mut ev = dat.events(0);
    let mut out = Vec::new();
    while let Some(Item::Event(r)) = ev.next() {
        out.push((
            r.cpu,
            r.ts,
            pid.int(r.data, dat.endian).unwrap(),
            value.uint(r.data, dat.endian).unwrap(),
            name.str(r.data, dat.endian).unwrap().to_string(),
        ));
    }
    assert!(!ev.report().damaged(), "{:?}", ev.report());
    out
}

#[test]
fn either_byte_order_and_kernel_long_reads_the_same_events() {
    let long_name = "a longer name for a long event, past 28 words of record data and more";
    let at = |base: u64| {
        let t1 = base + 100;
        let t2 = t1 + (1 << 27) + 5 + 7;
        let t3 = t2 + 3 + 9;
        (t1, t2, t3)
    };
    let (a1, a2, a3) = at(1000);
    let (b1, b2, b3) = at(1050);
    let mut want = vec![
        (0, a1, 10, 1, "a".to_string()),
        (1, b1, 10, 1, "a".to_string()),
        (0, a2, 11, u64::MAX, long_name.to_string()),
        (1, b2, 11, u64::MAX, long_name.to_string()),
        (0, a3, -1, 3, String::new()),
        (1, b3, -1, 3, String::new()),
    ];
    want.sort_by_key(|w| w.1);
    for e in [Endian::Little, Endian::Big] {
        for long in [8, 4] {
            let c = contents(e, long);
            let mut v6 = Vec::new();
            tracedat::write_v6(&c, &mut v6).unwrap();
            assert_eq!(read(&v6), want, "{e:?} long {long}, version 6");
            for comp in [Compression::None, Compression::Zlib, Compression::Zstd] {
                let mut v7 = Vec::new();
                tracedat::write_v7(&c, comp, &mut v7).unwrap();
                assert_eq!(read(&v7), want, "{e:?} long {long}, version 7 {comp:?}");
                let dat = TraceDat::open(&v7[..]).unwrap();
                assert_eq!(dat.endian, e);
                assert_eq!(dat.comms.get(11), Some("eleven"));
                assert_eq!(dat.options.clock.as_deref(), Some("mono"));
            }
        }
    }
}

#[test]
fn what_is_not_a_recording_is_refused_by_name() {
    assert!(matches!(
        TraceDat::open(&b"hello"[..]),
        Err(tracedat::Error::NotTraceDat)
    ));
    let mut v = b"\x17\x08\x44tracing8\0\0\x08\0\x10\0\0".to_vec();
    v.resize(64, 0);
    let e = TraceDat::open(&v[..]).unwrap_err();
    assert!(e.to_string().contains("version 8"), "{e}");
    let mut c = Vec::new();
    tracedat::write_v7(&contents(Endian::Little, 8), Compression::None, &mut c).unwrap();
    // The compression name: "none" becomes "nope".
    let at = c.windows(5).position(|w| w == b"none\0").unwrap();
    c[at + 2] = b'p';
    let e = TraceDat::open(&c[..]).unwrap_err();
    assert!(e.to_string().contains("compression \"nope\""), "{e}");
}

/// (buffer's events merged) CPU and time of every event of `dat`, and the stream's report.
fn merged(dat: &TraceDat<&[u8]>) -> (Vec<(u32, u64)>, tracedat::ReadReport) {
    let mut ev = dat.events_merged();
    let mut out = Vec::new();
    while let Some(item) = ev.next() {
        if let Item::Event(r) = item {
            out.push((r.cpu, r.ts));
        }
    }
    (out, ev.report().clone())
}

#[test]
fn a_version_6_instance_buffer_reads_merged_with_the_top_one() {
    for e in [Endian::Little, Endian::Big] {
        let mut c = contents(e, 8);
        c.instances = vec![(
            "timers".to_string(),
            vec![(0, page(e, 8, 1020)), (1, page(e, 8, 1070))],
        )];
        let mut v6 = Vec::new();
        tracedat::write_v6(&c, &mut v6).unwrap();
        let dat = TraceDat::open(&v6[..]).unwrap();
        assert!(dat.notes.is_empty(), "{:?}", dat.notes);
        let names: Vec<&str> = dat.buffers.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["", "timers"]);
        // The top buffer alone, then both in time order.
        assert_eq!(read(&v6).len(), 6);
        let (all, report) = merged(&dat);
        assert!(!report.damaged(), "{report:?}");
        assert_eq!(all.len(), 12);
        assert!(all.windows(2).all(|w| w[0].1 <= w[1].1), "{all:?}");
        let first: Vec<_> = all.iter().take(4).copied().collect();
        assert_eq!(first, [(0, 1100), (0, 1120), (1, 1150), (1, 1170)]);
    }
}

#[test]
fn a_version_6_instance_that_points_nowhere_is_a_note_not_a_refusal() {
    let mut c = contents(Endian::Little, 8);
    c.instances = vec![("lost".to_string(), vec![(0, page(Endian::Little, 8, 2000))])];
    let mut v6 = Vec::new();
    tracedat::write_v6(&c, &mut v6).unwrap();
    // The BUFFER option's offset: past the end of the file, then at the top buffer's label's
    // neighbour (not a flyrecord label).
    let name = v6.windows(5).position(|w| w == b"lost\0").unwrap();
    for bad in [u64::MAX, v6.len() as u64 - 3, 16] {
        let mut f = v6.clone();
        f[name - 8..name].copy_from_slice(&bad.to_le_bytes());
        let dat = TraceDat::open(&f[..]).unwrap();
        assert_eq!(dat.buffers.len(), 1, "offset {bad}");
        assert!(
            dat.notes
                .iter()
                .any(|n| n.contains("instance buffer \"lost\" not read")),
            "offset {bad}: {:?}",
            dat.notes
        );
        assert_eq!(merged(&dat).0.len(), 6, "offset {bad}");
    }
}

#[test]
fn buffers_past_the_cpu_bound_are_left_out_with_a_note() {
    let e = Endian::Little;
    let mut c = contents(e, 8);
    // The top buffer: every CPU a kernel may have (most of them empty).
    let limit = model::cpuset::MAX_CPU + 1;
    c.cpus = (0..limit).map(|cpu| (cpu, Vec::new())).collect();
    c.cpus[0].1 = page(e, 8, 1000);
    c.instances = vec![("more".to_string(), vec![(0, page(e, 8, 1020))])];
    let mut v6 = Vec::new();
    tracedat::write_v6(&c, &mut v6).unwrap();
    let dat = TraceDat::open(&v6[..]).unwrap();
    assert_eq!(dat.buffers.len(), 1);
    assert!(
        dat.notes
            .iter()
            .any(|n| n.contains("buffer \"more\" not read")),
        "{:?}",
        dat.notes
    );
    assert_eq!(merged(&dat).0.len(), 3);
}
