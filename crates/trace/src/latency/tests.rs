//! Latency-tracer reports: the kernel documentation's examples (fixtures/traces/latency), layouts
//! of newer kernels written from their printf formats, damage, and arbitrary text.
use proptest::prelude::*;

use super::*;

fn fixture(name: &str) -> String {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/traces/latency");
    std::fs::read_to_string(format!("{dir}/{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn show(e: &LatencyEntry) -> String {
    let m = e.mark.unwrap_or(' ');
    format!(
        "{}-{} {}{} {}ns{m} {}",
        e.comm, e.pid, e.cpu, e.flags, e.offset_ns, e.text
    )
}

fn summary(r: &LatencyReport) -> String {
    let t = r.task.clone().unwrap_or_default();
    let ends = [r.entries.first(), r.entries.last()].map(|e| e.map(show).unwrap_or_default());
    let facts = [
        format!("{} on {:?}: {}ns", r.tracer, r.kernel, r.latency_ns),
        format!("#{:?}/{:?}", r.entries_shown, r.entries_total),
        format!("CPU {:?} M:{:?}", r.cpu, r.preempt_model),
        format!("task {}-{}", t.comm, t.pid),
        format!("{:?}", (t.uid, t.nice, t.policy, t.rt_prio)),
        format!("{:?} -> {:?};", r.started_at, r.ended_at),
        format!("{} entries {:?} gaps", r.entries.len(), r.elided_at),
        format!("{} frames", r.stack.len()),
    ];
    format!("{}\n{}\n{}", facts.join(" "), ends[0], ends[1])
}

/// Per fixture: its name; the report's facts; its first and last entries (read off the files).
const EXPECTED: &str = r#"kdoc_irqsoff_display_graph.txt
irqsoff on Some("4.20.0-rc6+"): 3751000ns #Some(274)/Some(274) CPU Some(0) M:Some("desktop") task bash-1507 (Some(0), Some(0), Some(0), Some(0)) Some("free_debug_processing") -> Some("return_to_handler"); 13 entries [9] gaps 14 frames
bash-1507 0d... 0ns  _raw_spin_lock_irqsave();
bash-1507 0d..1 3792000ns  <stack trace>
kdoc_irqsoff_function_trace.txt
irqsoff on Some("3.8.0-test+"): 71000ns #Some(168)/Some(168) CPU Some(3) M:Some("preempt") task bash-2042 (Some(0), Some(0), Some(0), Some(0)) Some("ata_scsi_queuecmd") -> Some("ata_scsi_queuecmd"); 19 entries [9] gaps 25 frames
bash-2042 3d... 0ns  _raw_spin_lock_irqsave <-ata_scsi_queuecmd
bash-2042 3d..1 120000ns  <stack trace>
kdoc_irqsoff_nofunc_ps.txt
irqsoff on Some("3.8.0-test+"): 259000ns #Some(4)/Some(4) CPU Some(2) M:Some("preempt") task ps-6143 (Some(0), Some(0), Some(0), Some(0)) Some("__lock_task_sighand") -> Some("_raw_spin_unlock_irqrestore"); 4 entries [] gaps 10 frames
ps-6143 2d... 0ns! trace_hardirqs_off <-__lock_task_sighand
ps-6143 2d..1 306000ns  <stack trace>
kdoc_irqsoff_nofunc_swapper.txt
irqsoff on Some("3.8.0-test+"): 16000ns #Some(4)/Some(4) CPU Some(0) M:Some("preempt") task swapper/0-0 (Some(0), Some(0), Some(0), Some(0)) Some("run_timer_softirq") -> Some("run_timer_softirq"); 4 entries [] gaps 14 frames
<idle>-0 0d.s2 0ns+ _raw_spin_lock_irq <-run_timer_softirq
<idle>-0 0dNs3 25000ns  <stack trace>
kdoc_preemptirqsoff_function_trace.txt
preemptirqsoff on Some("3.8.0-test+"): 161000ns #Some(339)/Some(339) CPU Some(3) M:Some("preempt") task ls-2269 (Some(0), Some(0), Some(0), Some(0)) Some("schedule") -> Some("mutex_unlock"); 59 entries [32, 43, 49] gaps 8 frames
kworker/-59 3...1 0ns  __schedule <-schedule
ls-2269 3d... 186000ns  <stack trace>
kdoc_preemptirqsoff_nofunc.txt
preemptirqsoff on Some("3.8.0-test+"): 100000ns #Some(4)/Some(4) CPU Some(3) M:Some("preempt") task ls-2230 (Some(0), Some(0), Some(0), Some(0)) Some("ata_scsi_queuecmd") -> Some("ata_scsi_queuecmd"); 4 entries [] gaps 19 frames
ls-2230 3d... 0ns+ _raw_spin_lock_irqsave <-ata_scsi_queuecmd
ls-2230 3...1 111000ns  <stack trace>
kdoc_preemptoff_function_trace.txt
preemptoff on Some("3.8.0-test+"): 83000ns #Some(241)/Some(241) CPU Some(1) M:Some("preempt") task bash-1994 (Some(0), Some(0), Some(0), Some(0)) Some("wake_up_new_task") -> Some("task_rq_unlock"); 32 entries [5, 13, 23] gaps 7 frames
bash-1994 1d..1 0ns  _raw_spin_lock_irqsave <-wake_up_new_task
bash-1994 1.N.1 104000ns  <stack trace>
kdoc_preemptoff_nofunc.txt
preemptoff on Some("3.8.0-test+"): 46000ns #Some(4)/Some(4) CPU Some(1) M:Some("preempt") task sshd-1991 (Some(0), Some(0), Some(0), Some(0)) Some("do_IRQ") -> Some("do_IRQ"); 4 entries [] gaps 4 frames
sshd-1991 1d.h. 0ns+ irq_enter <-do_IRQ
sshd-1991 1d..1 52000ns  <stack trace>
kdoc_wakeup_nofunc.txt
wakeup on Some("3.8.0-test+"): 15000ns #Some(4)/Some(4) CPU Some(3) M:Some("preempt") task kworker/3:1H-312 (Some(0), Some(-20), Some(0), Some(0)) None -> None; 4 entries [] gaps 0 frames
<idle>-0 3dNs7 0ns  0:120:R   + [003]   312:100:R kworker/3:1H
<idle>-0 3d..3 15000ns  0:120:R ==> [003]   312:100:R kworker/3:1H
kdoc_wakeup_rt_events.txt
wakeup_rt on Some("3.8.0-test+"): 6000ns #Some(12)/Some(12) CPU Some(2) M:Some("preempt") task sleep-5882 (Some(0), Some(0), Some(1), Some(5)) None -> None; 12 entries [] gaps 0 frames
<idle>-0 2d.h4 0ns  0:120:R   + [002]  5882: 94:R sleep
<idle>-0 2d..3 6000ns  0:120:R ==> [002]  5882: 94:R sleep
kdoc_wakeup_rt_function_trace.txt
wakeup_rt on Some("3.8.0-test+"): 29000ns #Some(85)/Some(85) CPU Some(3) M:Some("preempt") task sleep-2448 (Some(0), Some(0), Some(1), Some(5)) None -> None; 85 entries [] gaps 0 frames
<idle>-0 3d.h4 1000ns+ 0:120:R   + [003]  2448: 94:R sleep
<idle>-0 3d..3 30000ns  0:120:R ==> [003]  2448: 94:R sleep
kdoc_wakeup_rt_nofunc.txt
wakeup_rt on Some("3.8.0-test+"): 5000ns #Some(4)/Some(4) CPU Some(3) M:Some("preempt") task sleep-2389 (Some(0), Some(0), Some(1), Some(5)) None -> None; 4 entries [] gaps 0 frames
<idle>-0 3d.h4 0ns  0:120:R   + [003]  2389: 94:R sleep
<idle>-0 3d..3 5000ns  0:120:R ==> [003]  2389: 94:R sleep"#;

/// Written here from the kernel's printf formats (not a capture): 5 and 7 flag columns
/// (migrate-disable; PREEMPT_RT's lazy preempt), sym-offset, a comm with a space, a wide
/// time column, entries and events lost.
const NEWER: &str = "# tracer: preemptirqsoff
# preemptirqsoff latency trace v1.1.5 on 6.6.0-rt15
# latency: 1130 us, #3/9, CPU#12 | (M:preempt_rt VP:0, KP:0, SP:0 HP:0 #P:16)
#    | task: Web Content-4242 (uid:1000 nice:-5 policy:2 rt_prio:10)
#  => started at: rwsem_optimistic_spin+0x20/0x194
   <...>-1        12d..1.    0us!: rwsem_optimistic_spin+0x20/0x194 <-rwsem_down+0x9/0x3f
CPU:12 [LOST 6 EVENTS]
Web Cont-4242     12dN.h4.. 1055999us : sched_wakeup: comm=a-b pid=3 prio=94
Web Cont-4242     12dN.h4.. 1056000us : <stack trace>
 => rwsem_down_write_slowpath+0xc9/0x3fe
";

/// Also written here: wakeup_dl (no sample in the kernel's documentation) and the
/// display-graph layout's context-switch banner and DURATION mark.
const DL: &str = "# tracer: wakeup_dl
# latency: 40 us, #2/2, CPU#1 | (M:preempt)
#    | task: dl-77 (uid:0 nice:0 policy:6 rt_prio:0)
  <idle>-0       1d.h4    0us :      0:120:R   + [001]    77: -1:R dl
  <idle>-0       1d..3   40us :      0:120:R ==> [001]    77: -1:R dl
";
const GRAPH: &str = "# tracer: irqsoff
# latency: 9 us
 ------------------------------------------
 0)   bash-1507    =>    <idle>-0
   5 us |   0)  <idle>-0  |  d.h. | ! 205.738 us  |  }
";

#[test]
fn every_fixture_parses_with_its_facts() {
    let lines: Vec<&str> = EXPECTED.lines().collect();
    assert_eq!(lines.len(), 48);
    for x in lines.chunks(4) {
        let text = fixture(x[0]);
        assert!(detect(&text), "{}", x[0]);
        let r = parse(&text).unwrap_or_else(|e| panic!("{}: {e}", x[0]));
        assert_eq!(summary(&r), x[1..].join("\n"), "{}", x[0]);
        assert_eq!(r.elided, !r.elided_at.is_empty());
        let json = serde_json::to_string(&r).unwrap_or_default();
        assert_eq!(serde_json::from_str::<LatencyReport>(&json).ok(), Some(r));
    }
}

#[test]
fn newer_layouts_read() {
    let r = parse(NEWER).unwrap_or_else(|e| panic!("{e}"));
    let want = "preemptirqsoff on Some(\"6.6.0-rt15\"): 1130000ns #Some(3)/Some(9) CPU Some(12) \
        M:Some(\"preempt_rt\") task Web Content-4242 (Some(1000), Some(-5), Some(2), Some(10)) \
        Some(\"rwsem_optimistic_spin+0x20/0x194\") -> None; 3 entries [1] gaps 1 frames
<...>-1 12d..1. 0ns! rwsem_optimistic_spin+0x20/0x194 <-rwsem_down+0x9/0x3f
Web Cont-4242 12dN.h4.. 1056000000ns  <stack trace>";
    assert_eq!(summary(&r), want);
    let mid = "Web Cont-4242 12dN.h4.. 1055999000ns  sched_wakeup: comm=a-b pid=3 prio=94";
    assert_eq!(show(&r.entries[1]), mid);
    let graph = parse(GRAPH).unwrap_or_default().entries;
    assert_eq!(
        graph.iter().map(show).collect::<Vec<_>>(),
        ["<idle>-0 0d.h. 5000ns! }"]
    );
}

#[test]
fn steps_and_sched_lines() {
    let r = parse(&fixture("kdoc_irqsoff_function_trace.txt")).unwrap_or_default();
    assert_eq!(r.longest_steps(2), [(14, 3000), (1, 1000)]);
    // The words are report::story's (tested there); here what they are made from.
    let dl = parse(DL).unwrap_or_default();
    let steps: Vec<_> = dl.entries.iter().map(LatencyEntry::sched).collect();
    assert_eq!(
        steps,
        [
            Some(SchedStep {
                switch: false,
                pid: 77
            }),
            Some(SchedStep {
                switch: true,
                pid: 77
            })
        ]
    );
    assert_eq!(r.entries[0].sched(), None);
}

#[test]
fn damage_is_named_by_line() {
    let text = fixture("kdoc_irqsoff_function_trace.txt");
    // Each case: the text replaced ~ its replacement ~ how the error starts.
    let cases = [
        "# latency: 71 us ~ # latency: 7l us ~ line 5: expected the latency `N us`",
        "#168/168 ~ #168/l68 ~ line 5: expected the entry counts `#SHOWN/TOTAL`",
        "CPU#3 ~ CPU#x ~ line 5: expected `CPU#N`, found `CPU#x`",
        "bash-2042 (uid ~ bash-x (uid ~ line 7: expected `task: COMM-PID",
        "nice:0 ~ nice:zero ~ line 7: expected a number for `nice` in the task line",
        "68us+: ata_bmdma ~ 68xs+: ata_bmdma ~ line 36: expected the time column `NNus`",
        "68us+: ata_bmdma ~ 68: ata_bmdma ~ line 36: the time column `68` has no `us` unit",
        "3d..1   68us+ ~ 3d   68us+ ~ line 36: expected an entry `COMM-PID CPU+FLAGS",
        "# latency: ~ # latenzy: ~ line 3: expected a `# latency: N us",
    ];
    for case in cases {
        let [from, to, want] = [0, 1, 2].map(|i| case.split(" ~ ").nth(i).unwrap_or_default());
        let got = parse(&text.replacen(from, to, 1))
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(got.starts_with(want), "{got}");
    }
    let plain = "    bash-2042    3d...    0us : _raw_spin_lock_irqsave <-ata_scsi_queuecmd\n";
    assert!(!detect(plain) && !detect("") && !detect("# tracer: function\n"));
    let second = format!("{text}{}", fixture("kdoc_preemptoff_nofunc.txt"));
    let cases = [
        (plain, "line 1: expected a latency tracer's header"),
        (
            "# tracer: function\n#\n  bash-1  0d...  0us : f <-g\n",
            "line 1: expected a",
        ),
        ("# tracer: irqsoff\n#\n", "line 1: expected a `# latency:"),
        (
            &second,
            "line 70: expected one report, found a second `# latency:` line",
        ),
    ];
    for (text, want) in cases {
        let got = parse(text).map(|_| ()).unwrap_err().to_string();
        assert!(got.starts_with(want), "{got}");
    }
}

proptest! {
    #[test]
    fn never_panics_on_arbitrary_text(text in "\\PC{0,300}") {
        let _ = detect(&text);
        if let Ok(r) = parse(&text) {
            let _ = r.longest_steps(3);
        }
    }

    #[test]
    fn never_panics_on_mangled_fixtures(
        which in 0usize..12, at in 0usize..10_000, len in 0usize..40,
        junk in "[0-9a-z #:|=>()\\[\\]./+!-]{0,12}",
    ) {
        let name = EXPECTED.lines().step_by(4).nth(which).unwrap_or_default();
        let text = fixture(name);
        let at = at % (text.len() + 1);
        let end = (at + len).min(text.len());
        if text.is_char_boundary(at) && text.is_char_boundary(end)
            && let Ok(r) = parse(&format!("{}{junk}{}", &text[..at], &text[end..]))
        {
            let _ = (r.longest_steps(5), r.entries.iter().map(LatencyEntry::sched).count());
        }
    }

    #[test]
    fn kernel_formatted_entries_read_back(
        comm in "[a-z/<>.]{1,8}", pid in 0u32..10_000_000, cpu in 0u32..512,
        flags in "[dX.][Nnp.][hsHz.][0-9.]\\.?", us in 0u64..100_000_000, mark in "[ +!#*@$]",
        text in "[a-z_]{1,20} <-[a-z_]{1,20}",
    ) {
        let line = format!("{comm:>8}-{pid:<7} {cpu:>3}{flags} {us:>4}us{mark}: {text}");
        let r = parse(&format!("# tracer: irqsoff\n# latency: 3 us\n{line}\n"));
        let e = r.map_err(|e| TestCaseError::fail(e.to_string()))?.entries.remove(0);
        let mark = mark.chars().next().filter(|c| *c != ' ');
        let want = LatencyEntry { comm, pid, cpu, flags, offset_ns: us * 1000, mark, text };
        prop_assert_eq!(e, want);
    }
}
