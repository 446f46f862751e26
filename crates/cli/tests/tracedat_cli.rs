//! `rtlab explain` of trace-cmd's recordings (trace.dat) end to end: each one explained as its
//! `trace-cmd report` text is, recordings rtlab writes in either version (latency tracers'
//! text, instance buffers), cut files, and a trace given through a pipe.

mod common;

use common::{rtlab, run_ok, trace_fixture as fixture};

/// trace-cmd records a latency tracer (`record -p wakeup_rt`, `irqsoff`...) as the tracer's
/// text: version 6 after a `latency` label, version 7 in a BUFFER_TEXT section. rtlab writes
/// both (here, from the kernel documentation's reports), reads them back as it reads the
/// text, and trace-cmd prints them.
#[test]
fn a_latency_tracer_recording_explains_as_its_text_does() {
    use tracedat::Compression;
    let src = std::fs::read(fixture("tracedat/cyclictest_2cpu_v7_zstd.dat")).unwrap();
    let mut contents =
        tracedat::Contents::from_dat(&tracedat::TraceDat::open(&src[..]).unwrap(), 1 << 32)
            .unwrap();
    contents.cpus.clear();
    let dir = tempfile::tempdir().unwrap();
    for report in [
        "kdoc_wakeup_rt_nofunc.txt",
        "kdoc_irqsoff_function_trace.txt",
    ] {
        let text_path = fixture(&format!("latency/{report}"));
        let text = std::fs::read(&text_path).unwrap();
        let want = run_ok(&["explain", text_path.to_str().unwrap(), "--format", "json"]);
        contents.latency = Some(text.clone());
        for (version, compression) in [
            (6, Compression::None),
            (7, Compression::None),
            (7, Compression::Zstd),
        ] {
            let path = dir
                .path()
                .join(format!("{report}.{version}.{compression:?}.dat"));
            let file = std::fs::File::create(&path).unwrap();
            match version {
                6 => tracedat::write_v6(&contents, file),
                _ => tracedat::write_v7(&contents, compression, file),
            }
            .unwrap();
            let got = run_ok(&["explain", path.to_str().unwrap(), "--format", "json"]);
            assert_eq!(got, want, "{}", path.display());
            match std::process::Command::new("trace-cmd")
                .args(["report", path.to_str().unwrap()])
                .output()
            {
                Ok(out) => {
                    assert_eq!(
                        String::from_utf8_lossy(&out.stderr),
                        "",
                        "{}",
                        path.display()
                    );
                    let first = String::from_utf8_lossy(&text)
                        .lines()
                        .find(|l| !l.starts_with('#') && !l.trim().is_empty())
                        .unwrap()
                        .to_string();
                    assert!(
                        String::from_utf8_lossy(&out.stdout).contains(&first),
                        "trace-cmd report of {} lacks {first:?}",
                        path.display()
                    );
                }
                Err(_) => {
                    testkit::live::skip("trace-cmd is not installed (apt-get install trace-cmd)")
                }
            }
        }
    }
    // A recording of a tracer's text that is no report rtlab reads is said so.
    contents.latency = Some(b"# tracer: function\n  cat-1 [000] 1.000000: foo <-bar\n".to_vec());
    let path = dir.path().join("function.dat");
    tracedat::write_v7(
        &contents,
        Compression::None,
        std::fs::File::create(&path).unwrap(),
    )
    .unwrap();
    let out = rtlab()
        .args(["explain", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("holds a tracer's text instead of events"),
        "{err}"
    );
}

#[test]
fn a_trace_cmd_recording_explains_as_its_report_text_does() {
    let dat = fixture("tracedat/cyclictest_2cpu_v7_zstd.dat");
    let out = run_ok(&["explain", dat.to_str().unwrap(), "--spikes", "2"]);
    assert!(out.contains("13391 events on CPUs 0,1"), "{out}");
    assert!(
        out.contains("CPU 0: cyclictest (pid 5849), 302 us late"),
        "{out}"
    );
    let irqs = run_ok(&["explain", "irqs", dat.to_str().unwrap()]);
    assert!(irqs.contains("local_timer interrupt"), "{irqs}");
    let json = run_ok(&[
        "explain",
        "sched",
        dat.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["trace"]["events"], 13391);
}

/// A regular file is read through a memory mapping; a pipe cannot be and is read with
/// `read`: both give the same explanation (a trace.dat must be a file: it is read at offsets).
#[test]
fn a_trace_read_from_a_pipe_explains_as_the_file_does() {
    let text = fixture("local/cyclictest_fifo99_hog_cpu1.txt");
    let dat = fixture("tracedat/cyclictest_2cpu_v7_zstd.dat");
    for (trace, pipe) in [(&text, true), (&dat, false)] {
        let from_file = run_ok(&["explain", "irqs", trace.to_str().unwrap()]);
        let name = trace.display().to_string();
        let same = |out: &[u8]| String::from_utf8_lossy(out).replace("/dev/stdin", &name);
        let as_stdin = rtlab()
            .args(["explain", "irqs", "/dev/stdin"])
            .stdin(std::fs::File::open(trace).unwrap())
            .output()
            .unwrap();
        assert!(as_stdin.status.success(), "{name}");
        assert_eq!(same(&as_stdin.stdout), from_file, "{name} as stdin");
        if pipe {
            let piped = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "cat '{name}' | '{}' explain irqs /dev/stdin",
                    env!("CARGO_BIN_EXE_rtlab")
                ))
                .output()
                .unwrap();
            assert!(
                piped.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&piped.stderr)
            );
            assert_eq!(same(&piped.stdout), from_file, "{name} through a pipe");
        }
    }
    // A trace.dat through a pipe: one line saying what to do, exit 2.
    let piped = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "cat '{}' | '{}' explain irqs /dev/stdin",
            dat.display(),
            env!("CARGO_BIN_EXE_rtlab")
        ))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&piped.stderr);
    assert_eq!(piped.status.code(), Some(2), "{err}");
    assert!(err.contains("save it to a file"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// `trace-cmd record -p timerlat` (lab, Debian's 6.12 RT kernel): the tracer's report and
/// analysis from the file, the same as from `trace-cmd report`'s text of it.
#[test]
fn a_timerlat_recording_explains_as_its_report_text_does() {
    let dat = fixture("tracedat/timerlat_osnoise_2cpu_v7_zstd.dat");
    let from_dat = run_ok(&["explain", dat.to_str().unwrap()]);
    assert!(
        from_dat.starts_with("timerlat: the worst thread latency is 3012.5 us on CPU 0"),
        "{from_dat}"
    );
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("report.txt");
    let packed = std::fs::read(fixture(
        "tracedat/timerlat_osnoise_2cpu_v7_zstd.report.txt.zst",
    ));
    let mut plain = Vec::new();
    std::io::Read::read_to_end(
        &mut ruzstd::decoding::StreamingDecoder::new(&packed.unwrap()[..]).unwrap(),
        &mut plain,
    )
    .unwrap();
    std::fs::write(&text, plain).unwrap();
    assert_eq!(run_ok(&["explain", text.to_str().unwrap()]), from_dat);
}

/// `trace-cmd record -p hwlat` (lab): `explain` gives the file's samples as it gives its report
/// text's, and `hwlat --from` takes the file.
#[test]
fn a_hwlat_recording_explains_as_its_report_text_does() {
    let dat = fixture("tracedat/hwlat_2cpu_v7_zstd.dat");
    let text = fixture("tracedat/hwlat_2cpu_v7_zstd.report.txt");
    let from_dat = run_ok(&["explain", dat.to_str().unwrap()]);
    assert!(from_dat.starts_with("hwlat: 4 samples"), "{from_dat}");
    assert_eq!(run_ok(&["explain", text.to_str().unwrap()]), from_dat);
    let out = rtlab()
        .args(["hwlat", "--from", dat.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc.to_string().contains("3920"), "{doc}");
}

#[test]
fn a_cut_recording_says_what_was_read_or_refuses_in_one_line() {
    let original = std::fs::read(fixture("tracedat/cyclictest_2cpu_v7_zstd.dat")).unwrap();
    let dat = tracedat::TraceDat::open(original.clone()).unwrap();
    // rtlab's own layout (options first, as version 6 has them): a cut in the data still
    // leaves the metadata whole.
    let mut bytes = Vec::new();
    let contents = tracedat::Contents::from_dat(&dat, 1 << 30).unwrap();
    tracedat::write_v7(&contents, tracedat::Compression::Zstd, &mut bytes).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // trace-cmd's layout puts the buffer's option after the data: a cut file lacks it.
    let cases = [
        (&original, original.len() - 9000, false),
        (&bytes, 2000, false),
        (&bytes, bytes.len() - 3000, true),
    ];
    for (i, (file, cut, whole)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("cut{i}.dat"));
        std::fs::write(&path, &file[..cut]).unwrap();
        let out = rtlab()
            .args(["explain", path.to_str().unwrap()])
            .output()
            .unwrap();
        let (stdout, err) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        if whole {
            assert_eq!(out.status.code(), Some(0), "{err}");
            assert!(
                stdout.contains("parts of the recording could not be read")
                    && stdout.contains("the file ends inside the data of CPU 1"),
                "{stdout}"
            );
        } else {
            assert_eq!(out.status.code(), Some(2), "case {i}: {stdout}");
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.contains("the file is cut short"), "{err}");
        }
    }
}

/// `trace-cmd record -B NAME` keeps events in a named instance's buffer; `trace-cmd report`
/// prints every buffer's, merged in time. Here the recording's pages go alternately to the
/// top buffer and to an instance (a version 6 file, as `trace-cmd convert --file-version 6`
/// writes one), and all of them to the instance alone: either explains as the original does.
#[test]
fn a_recording_split_among_instance_buffers_explains_as_the_whole_does() {
    let src = std::fs::read(fixture("tracedat/cyclictest_2cpu_v7_zstd.dat")).unwrap();
    let dat = tracedat::TraceDat::open(&src[..]).unwrap();
    let whole = tracedat::Contents::from_dat(&dat, 1 << 32).unwrap();
    let page = whole.page_size as usize;
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("whole.dat");
    tracedat::write_v6(&whole, std::fs::File::create(&original).unwrap()).unwrap();
    let want = run_ok(&["explain", original.to_str().unwrap(), "--format", "json"]);
    let mut split = whole.clone();
    let mut timers = Vec::new();
    for (cpu, pages) in &mut split.cpus {
        let (mut top, mut other) = (Vec::new(), Vec::new());
        for (i, p) in pages.chunks(page).enumerate() {
            if i % 2 == 0 { &mut top } else { &mut other }.extend_from_slice(p);
        }
        *pages = top;
        timers.push((*cpu, other));
    }
    assert!(
        timers.iter().all(|(_, p)| !p.is_empty()),
        "several pages a CPU"
    );
    split.instances = vec![("timers".to_string(), timers)];
    let mut alone = whole.clone();
    alone.instances = vec![("rt".to_string(), std::mem::take(&mut alone.cpus))];
    alone.cpus = alone.instances[0]
        .1
        .iter()
        .map(|&(c, _)| (c, Vec::new()))
        .collect();
    for (name, c) in [("split", &split), ("alone", &alone)] {
        let path = dir.path().join(format!("{name}.dat"));
        tracedat::write_v6(c, std::fs::File::create(&path).unwrap()).unwrap();
        let got = run_ok(&["explain", path.to_str().unwrap(), "--format", "json"]);
        let strip = |s: &str| {
            s.replace(path.to_str().unwrap(), "")
                .replace(original.to_str().unwrap(), "")
        };
        assert_eq!(strip(&got), strip(&want), "{name}");
        // trace-cmd reads the file too, tagging the instance's lines with its name.
        if let Ok(out) = std::process::Command::new("trace-cmd")
            .args(["report", path.to_str().unwrap()])
            .output()
        {
            assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{name}");
            let tag = format!("{}: ", c.instances[0].0);
            let tagged = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| l.trim_start().starts_with(&tag))
                .count();
            assert!(tagged > 1000, "{name}: {tagged} lines of the instance");
        }
    }
}
