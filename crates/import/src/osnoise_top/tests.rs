//! `rtla osnoise top` / `rtla hwnoise` tests: the kernel documentation's example, the other
//! layouts rtla prints (refreshes with escapes, hwnoise's narrow table, 1 and 256 CPUs, a
//! command line), and damaged copies.

use model::imported::Quantity;
use model::measure::MeasureRun;
use model::noise::{Engine, NOISE_SCHEMA, PerSource};

use crate::tests::{err, fixture, when};
use crate::{Format, detect, import};

fn read(text: &str) -> MeasureRun {
    import("f.txt", text, when()).unwrap_or_else(|e| panic!("{e}"))
}

fn noted(run: &MeasureRun, needle: &str) -> bool {
    run.import
        .as_ref()
        .unwrap()
        .notes
        .iter()
        .any(|n| n.contains(needle))
}

const HEADER: &str = "CPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single          HW          NMI          IRQ      Softirq       Thread";
const HW_HEADER: &str = "CPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single          HW          NMI";

/// A row as rtla prints it.
fn row(
    cpu: u32,
    periods: u64,
    runtime: u64,
    noise: u64,
    max: u64,
    single: u64,
    counts: &[u64],
) -> String {
    let left = ((runtime - noise) as u128 * 10_000_000 / runtime as u128) as u64;
    let mut s = format!(
        "{cpu:>3} #{periods:<6} {runtime:>12} {noise:>12}   {:>3}.{:05}{max:>12} {single:>12}",
        left / 100_000,
        left % 100_000
    );
    for c in counts {
        s.push_str(&format!("{c:>12} "));
    }
    s.trim_end().to_string()
}

#[test]
fn the_kernel_documentation_example() {
    let text = fixture("kdoc_osnoise_top_4cpu.txt");
    assert_eq!(detect(&text), Some(Format::RtlaOsnoiseTop));
    let run = read(&text);
    assert_eq!(run.schema, NOISE_SCHEMA);
    let back = MeasureRun::from_json(&run.to_json()).unwrap();
    assert_eq!(back, run);
    assert!(run.check_bounds().is_ok());
    assert_eq!(run.unjudgeable(), None);
    let info = run.import.as_ref().unwrap();
    assert_eq!(
        (info.format.as_str(), info.quantity),
        ("rtla-osnoise-top", Quantity::OsNoise)
    );
    let noise = run.noise.as_ref().unwrap();
    assert_eq!(
        (noise.engine, noise.counter.as_str()),
        (Engine::Imported, "rtla-osnoise")
    );
    assert_eq!(noise.attribution, "tracer");
    // -r 900000 (59 periods of 900 ms: 53,100,000 us); the period is rtla's default.
    assert_eq!(
        (noise.runtime_ns.get(), noise.period_ns.get()),
        (900_000_000, 1_000_000_000)
    );
    assert_eq!(noise.threshold_ns.get(), 5_000);
    assert!(noted(&run, "threshold is not given"));
    assert_eq!(noise.cpus.len(), 4);
    let c0 = &noise.cpus[0];
    assert_eq!((c0.runtime_ns, c0.noise_ns), (53_100_000_000, 304_896_000));
    assert_eq!(
        (c0.max_period_noise_ns, c0.max_single_ns),
        (6_978_000, 56_000)
    );
    assert_eq!(
        c0.counts,
        Some(PerSource {
            hw: 549,
            nmi: 0,
            irq: 53_111,
            softirq: 1590,
            thread: 13
        })
    );
    assert_eq!(c0.interruptions, 549 + 53_111 + 1590 + 13);
    // rtla printed 99.42580 % for CPU 0.
    assert!((c0.available_pct().unwrap() - 99.425_80).abs() < 0.000_01);
    assert_eq!(run.elapsed_ns.get(), 60_000_000_000);
    assert!(
        run.cpus
            .iter()
            .all(|c| c.raw.count == 0 && c.histogram.count() == 0)
    );
    assert_eq!(
        run.cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
}

#[test]
fn refreshes_with_escapes_read_the_last_complete_table() {
    let table = |secs: u64, noise: u64| {
        format!(
            "\u{1b}c\u{1b}[2;37;40m                                          Operating System Noise                                       \u{1b}[0;0;0m\n\
             duration:   0 00:00:{secs:02} | time is in us\n\u{1b}[2;30;47m{HEADER}\u{1b}[0;0;0m\n{}\n{}\n",
            row(0, secs, secs * 1_000_000, noise, noise, 3, &[1, 0, 2, 3, 4]),
            row(1, secs, secs * 1_000_000, 7, 7, 7, &[0, 0, 1, 0, 0]),
        )
    };
    let mut text = format!("{}{}{}", table(1, 10), table(2, 20), table(3, 30));
    let run = read(&text);
    let noise = run.noise.as_ref().unwrap();
    assert_eq!(noise.cpus[0].noise_ns, 30_000);
    assert_eq!(run.elapsed_ns.get(), 3_000_000_000);
    assert!(noted(&run, "3 refreshes"));
    // Killed while printing: the last refresh lacks CPU 1's row.
    let cut = text
        .rfind(&row(1, 3, 3_000_000, 7, 7, 7, &[0, 0, 1, 0, 0]))
        .unwrap();
    text.truncate(cut);
    let run = read(&text);
    assert_eq!(run.noise.as_ref().unwrap().cpus[0].noise_ns, 20_000);
    assert!(noted(&run, "cut short"));
    // The same with Windows line ends.
    let crlf = text.replace('\n', "\r\n");
    assert_eq!(read(&crlf).noise.as_ref().unwrap().cpus[0].noise_ns, 20_000);
}

#[test]
fn hwnoise_one_cpu_quiet_with_its_command_line() {
    let text = format!(
        "[root@host ~]# rtla hwnoise -c 7 -d 30s -T 2 -q\n\
         {:>64}\nduration:   0 00:00:30 | time is in us\n{HW_HEADER}\n{}\n",
        "Hardware-related Noise",
        row(7, 30, 22_500_000, 150, 40, 12, &[9, 1]),
    );
    assert_eq!(detect(&text), Some(Format::RtlaHwnoiseTop));
    let run = read(&text);
    let noise = run.noise.as_ref().unwrap();
    assert_eq!(noise.counter, "rtla-hwnoise");
    assert_eq!(run.import.as_ref().unwrap().format, "rtla-hwnoise-top");
    assert_eq!(
        run.import.as_ref().unwrap().command.as_deref(),
        Some("rtla hwnoise -c 7 -d 30s -T 2 -q")
    );
    assert_eq!(noise.threshold_ns.get(), 2_000);
    assert_eq!(
        (noise.runtime_ns.get(), noise.period_ns.get()),
        (750_000_000, 1_000_000_000)
    );
    let c = &noise.cpus[0];
    assert_eq!((c.cpu, c.interruptions), (7, 10));
    assert_eq!(
        c.counts,
        Some(PerSource {
            hw: 9,
            nmi: 1,
            ..PerSource::default()
        })
    );
    assert!(noted(&run, "only the HW and NMI counts"));
}

#[test]
fn two_hundred_fifty_six_cpus_and_missed_events() {
    let mut text = format!(
        "{:>62}\nduration:   1 02:03:04 | time is in us\n{HEADER}\n",
        "Operating System Noise"
    );
    for cpu in 0..256 {
        text.push_str(&row(
            cpu,
            93_784,
            93_784_000_000,
            u64::from(cpu) * 1000 + 1000,
            900,
            90,
            &[1, 2, 3, 4, 5],
        ));
        text.push('\n');
    }
    text.push_str("12 (0.01%) events missed, results might not be accurate\n");
    let run = read(&text);
    let noise = run.noise.as_ref().unwrap();
    assert_eq!(noise.cpus.len(), 256);
    assert_eq!(noise.cpus[255].noise_ns, 256_000_000);
    assert_eq!(run.elapsed_ns.get(), 93_784_000_000_000);
    assert!(
        noise
            .attribution_note
            .as_deref()
            .unwrap()
            .contains("12 (0.01%) events missed")
    );
    assert!(MeasureRun::from_json(&run.to_json()).is_ok());
}

#[test]
fn a_table_in_ns_is_read_as_such() {
    let text = fixture("kdoc_osnoise_top_4cpu.txt").replace("time is in us", "time is in ns");
    let run = read(&text);
    let c0 = &run.noise.as_ref().unwrap().cpus[0];
    assert_eq!((c0.runtime_ns, c0.noise_ns), (53_100_000, 304_896));
    assert_eq!(run.import.as_ref().unwrap().resolution_ns, 1);
    assert!(noted(&run, "times are in ns"));
    assert_eq!(run.noise.as_ref().unwrap().runtime_ns.get(), 900_000);
}

#[test]
fn an_unreadable_duration_falls_back_to_the_periods() {
    // Early rtla printed the local time zone's hours minus one: `-1` in UTC.
    let text = fixture("kdoc_osnoise_top_4cpu.txt").replace("0 00:01:00", "0 -1:01:00");
    let run = read(&text);
    assert_eq!(run.elapsed_ns.get(), 59_000_000_000);
    assert!(noted(&run, "does not read"));
}

#[test]
fn hostile_tables_are_refused_naming_the_line() {
    let text = fixture("kdoc_osnoise_top_4cpu.txt");
    let e = err(&text.replace("  2 #59", "99999999 #59"));
    assert!(
        e.starts_with("f.txt: line 6: CPU 99999999 is past the largest CPU"),
        "{e}"
    );
    let e = err(&text.replace("  3 #59", "  1 #59"));
    assert_eq!(
        e,
        "f.txt: line 7: CPU 1 has a second row in the table; each CPU has one"
    );
    let e = err(&text.replace("53111", "99999999999999999999999"));
    assert!(
        e.contains("line 4: expected a whole number below 2^64 for IRQ"),
        "{e}"
    );
    let e = err(&text.replace("304896", "-304896"));
    assert!(
        e.contains("line 4: expected a whole number below 2^64 for Noise"),
        "{e}"
    );
    let e = err(&text.replace("       290842", "    290842000"));
    assert!(
        e.contains("line 6: CPU 2: Noise 290842000 is more than its Runtime"),
        "{e}"
    );
    let e = err(&text.replace("1590           13", "1590"));
    assert!(e.contains("line 4: expected 12 columns"), "{e}");
    let e = err(&text.replace("99.42580", "99.4\u{0}580"));
    assert!(e.contains("% CPU Aval"), "{e}");
    // A last row cut inside a number at the end of the file, with no table before it.
    let cut = &text[..text.len() - 20];
    assert!(err(cut).contains("line 7"), "{}", err(cut));
    // 10 MB of garbage after a title is not a table.
    let garbage = format!("Operating System Noise\n{}", "x\u{7f}y ".repeat(2_500_000));
    assert!(err(&garbage).contains("not a format rtlab import reads"));
    let e = crate::import_as(Format::RtlaOsnoiseTop, "f.txt", &garbage, when()).unwrap_err();
    assert!(
        e.what
            .contains("expected the `CPU Period Runtime Noise ...` column line"),
        "{e}"
    );
}

proptest::proptest! {
    #[test]
    fn never_panics(text in "\\PC{0,400}") {
        let _ = crate::import_as(Format::RtlaOsnoiseTop, "f.txt", &format!("Operating System Noise\n{HEADER}\n{text}"), when());
    }
}
