//! The sentences, checked against what they say of fixtures: explanations with the stories
//! rtlab told of them when `trace` still made the sentences (fixtures/explanations), and the
//! kernel tracers' reports of fixtures/traces.

use model::explain::{Caveat, Explanation, TraceCapture};
use proptest::prelude::*;

use super::{agent, caveat, hwlat, latency, spike, timerlat};

fn fixture(path: &str) -> String {
    let path = format!("{}/../../fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Each explanation is told, word for word, as `trace` told it before it kept the phases
/// instead of the sentences: on time, late with and without reasons, each kind of task, a
/// handler's work and its pattern, the fair scheduler, the caveats.
#[test]
fn explanations_are_told_as_they_always_were() {
    let told: serde_json::Value = serde_json::from_str(&fixture("explanations/told.json")).unwrap();
    for case in told.as_array().unwrap() {
        let x: Explanation = serde_json::from_value(case["explanation"].clone()).unwrap();
        assert_eq!(
            spike::tell(&x),
            case["story"].as_str().unwrap(),
            "{}",
            case["from"]
        );
        let said: Vec<String> = x.caveats.iter().map(caveat::say).collect();
        let want: Vec<String> = serde_json::from_value(case["caveats"].clone()).unwrap();
        assert_eq!(said, want);
    }
}

/// What the stories say of the traces' spikes, from the sentences up.
#[test]
fn stories_name_what_held_the_thread_up() {
    let told: serde_json::Value = serde_json::from_str(&fixture("explanations/told.json")).unwrap();
    let stories: Vec<String> = told
        .as_array()
        .unwrap()
        .iter()
        .map(|c| spike::tell(&serde_json::from_value(c["explanation"].clone()).unwrap()))
        .collect();
    let all = stories.join("\n");
    for said in [
        "hog (pid 29010, real-time priority 99), of higher priority, held the CPU for 3018 us",
        "local_timer interrupt ran 180 us: it expired 18 hrtimers (hrtimer_wakeup 18)",
        "woke 18 tasks (storm700 3, storm701 3, storm702 3, storm703 3, and 3 more, 1 of them real-time)",
        "raised softirq TIMER",
        "Pattern: concurrent hrtimer expiries of non-real-time tasks",
        "PREEMPT_RT kernel the hrtimers of non-real-time tasks expire in the timer softirq",
        "The timer interrupt came 76 us late: 76 us with the CPU idle",
        "sharing the CPU under the fair scheduler",
    ] {
        assert!(all.contains(said), "missing {said:?} in:\n{all}");
    }
    // A normal thread's delay is never a same-priority FIFO story.
    let fair = stories
        .iter()
        .find(|s| s.contains("fair scheduler"))
        .unwrap();
    assert!(!fair.contains("same priority"), "{fair}");
}

/// A capture written before `rtlab.explain/2` has no phases to tell: its stored sentences are
/// told as they were.
#[test]
fn old_documents_are_told_as_they_were_written() {
    let old: TraceCapture =
        serde_json::from_str(&fixture("explanations/trace_capture_before_explain2.json")).unwrap();
    let x = &old.explanations[0];
    assert_eq!(Some(spike::tell(x)), x.old_story);
    assert!(spike::tell(x).contains("7064 us with interrupts off in apt-get"));
    let said = caveat::say(&old.explanations[1].caveats[0]);
    assert!(
        said.starts_with("4 switch(es) on CPU 1 are not in the trace"),
        "{said}"
    );
}

#[test]
fn caveats_say_what_limits_the_explanation() {
    let cases = [
        (
            Caveat::InferredSwitches { cpu: 2, count: 1 },
            "1 switch on CPU 2 is not in the trace and was inferred",
        ),
        (
            Caveat::NoTimerExpiry,
            "the thread's timer expiry is not in the trace: the timer is taken to have fired on time",
        ),
        (
            Caveat::NoHrtimerEvents,
            "the trace has no hrtimer events: the timer is taken to have fired on time, so a late",
        ),
        (Caveat::NoWakeup, "the thread's wake-up is not in the trace"),
        (
            Caveat::NoSwitchIn,
            "the thread's switch-in is not in the trace",
        ),
        (
            Caveat::LostEvents { times: 1 },
            "the kernel reported lost events once in this window: parts may be missing",
        ),
        (
            Caveat::LostEvents { times: 3 },
            "the kernel reported lost events 3 times in this window",
        ),
        (
            Caveat::WindowTruncated {
                max_events: 500_000,
            },
            "the window held more than 500000 events, and those after them were not read: a \
             damaged trace",
        ),
        (
            Caveat::BufferStartedLate,
            "the CPU's trace buffer starts inside the window: older events are gone",
        ),
        (
            Caveat::Migrated {
                from: 3,
                to: 1,
                at_ns: 2_500,
            },
            "the thread migrated from CPU 3 to CPU 1 at +2.5 us (pin it to one CPU)",
        ),
        (Caveat::Said("as it was".to_string()), "as it was"),
    ];
    for (c, want) in cases {
        assert!(caveat::say(&c).starts_with(want), "{}", caveat::say(&c));
    }
}

/// Also written here: a report of a newer kernel, with lost entries and no `ended at`.
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

/// Also written here: wakeup_dl (no sample in the kernel's documentation).
const DL: &str = "# tracer: wakeup_dl
# latency: 40 us, #2/2, CPU#1 | (M:preempt)
#    | task: dl-77 (uid:0 nice:0 policy:6 rt_prio:0)
  <idle>-0       1d.h4    0us :      0:120:R   + [001]    77: -1:R dl
  <idle>-0       1d..3   40us :      0:120:R ==> [001]    77: -1:R dl
";

#[test]
fn latency_reports_are_told() {
    let story = |name: &str| {
        let text = match name {
            "NEWER" => NEWER.to_string(),
            "DL" => DL.to_string(),
            _ => fixture(&format!("traces/latency/{name}")),
        };
        latency::tell(&trace::latency::parse(&text).unwrap_or_default())
    };
    // Each case: the text (a fixture or a const above) ~ what its story says.
    let cases = [
        "kdoc_irqsoff_function_trace.txt ~ irqsoff: interrupts were off for 71 us on CPU 3 \
         while bash (pid 2042) was running, from ata_scsi_queuecmd to ata_scsi_queuecmd. \
         Longest steps: ata_bmdma_start <-ata_bmdma_qc_issue took 3 us (at 68 us). The \
         header counts 168 of 168 entries; the text holds 19, some were elided. Top of the \
         recorded stack (25 frames): _raw_spin_unlock_irqrestore <- ata_scsi_queuecmd <- \
         scsi_dispatch_cmd.",
        "kdoc_wakeup_rt_events.txt ~ wakeup_rt: sleep (pid 5882, SCHED_FIFO prio 5) took 6 \
         us from its wake-up to running on CPU 2. It was woken at 0 us by <idle> (pid 0) and \
         switched in at 6 us in place of <idle> (pid 0). No step between entries took 2 us \
         or more: the time is spread out. The header counts 12 of 12 entries.",
        "kdoc_wakeup_nofunc.txt ~ (pid 312, SCHED_OTHER nice -20) took 15 us",
        "kdoc_preemptirqsoff_function_trace.txt ~ were off (nothing could run) for 161 us",
        "kdoc_preemptirqsoff_function_trace.txt ~ meanwhile: kworker/-59, ls-2269.",
        "kdoc_preemptoff_nofunc.txt ~ Longest steps: irq_enter <-do_IRQ took 46 us (at 0 us)",
        "NEWER ~ while Web Content (pid 4242) was running, from rwsem_optimistic_spin+0x20",
        "NEWER ~ counts 3 of 9 entries (6 lost to a full buffer); the text holds 3, some were",
        "DL ~ dl (pid 77, SCHED_DEADLINE) took 40 us from its wake-up to running on CPU 1",
    ];
    for case in cases {
        let (name, want) = case.split_once(" ~ ").unwrap_or_default();
        assert!(story(name).contains(want), "{name}: {}", story(name));
    }
}

#[test]
fn hwlat_samples_are_told() {
    let r = trace::hwlat::parse(&fixture("traces/hwlat/kdoc_hwlat_tracer_trace.txt")).unwrap();
    assert_eq!(
        hwlat::tell(&r),
        "hwlat: 12 samples over the threshold on 7 of 8 CPUs; worst 18 us (inner) on CPU 3 at \
         ts 1581527654.889013793 (sample #7). 2 samples saw NMIs (up to 7 us): that time is \
         the kernel's own NMI handling, not the hardware's. Latency seen with interrupts off \
         and nothing else running points at firmware (SMIs), the hypervisor or the hardware."
    );
    // No count, no header, an NMI count without its time.
    let text = "           <...>-4711  [001] d... 35401.973699: #1       inner/outer(us): 2150/1930    ts:1578801212.559595228\n\
        <...>-8799    [000] dn...   613.749741: #2 inner/outer(us):   41/41    ts:1702045267.016266287 count:9970 nmi-count:2\n\
        <...>-1729  [012]   678.473449: hwlat: #3     inner/outer(us):   11/12    ts:1.5 count:6\n";
    let s = hwlat::tell(&trace::hwlat::parse(text).unwrap());
    assert!(s.starts_with("hwlat: 3 samples over the threshold on 3 CPUs; worst 2150 us (inner) on CPU 1 at ts 1578801212.559595228 (sample #1). 1 sample saw NMIs: that"), "{s}");
    let none = hwlat::tell(&trace::hwlat::HwlatReport::default());
    assert!(none.starts_with("hwlat: no sample went over"), "{none}");
}

#[test]
fn timerlat_latencies_are_told() {
    let text = fixture("traces/rtla/kdoc_timerlat_tracer_trace.txt");
    let story = timerlat::tell(&trace::timerlat::parse(&text).unwrap());
    assert!(
        story.starts_with("timerlat: the worst thread latency is 11.7 us on CPU 0 (activation #1)"),
        "{story}"
    );
    assert!(story.contains("\nCPU  activations  irq min"), "{story}");
}

proptest! {
    #[test]
    fn the_tracers_reports_are_told_whatever_they_hold(text in "\\PC{0,300}") {
        if let Ok(r) = trace::latency::parse(&text) {
            let _ = latency::tell(&r);
        }
        if let Ok(r) = trace::hwlat::parse(&text) {
            let _ = hwlat::tell(&r);
        }
        if let Ok(r) = trace::timerlat::parse(&format!("# tracer: timerlat\n{text}")) {
            let _ = timerlat::tell(&r);
        }
    }
}

/// A lab spike (6.12-rt arm64, trimmed to its largest causes): the thread, preempted by a
/// FIFO 98 hog before it armed its next timer, armed it 2.17 s past the deadline. The story
/// says so, and times the timer interrupt from the arming, not from the deadline.
#[test]
fn a_timer_armed_past_its_deadline_is_told_from_the_arming() {
    let mut x: Explanation = serde_json::from_str(
        r#"{"cpu": 1, "pid": 251, "comm": "rtlab/1", "prio": 9, "latency_ns": 2174867600, "deadline_ns": 23585949760, "cycle": null, "milestones": {"timer_armed_ns": 2174542256, "timer_fired_ns": 2174744688, "woken_ns": 2174758048, "switched_in_ns": 2174867600}, "parts": [{"kind": "higher-priority-task", "what": {"kind": "task", "comm": "lab-hog", "pid": 214, "prio": 1}, "duration_ns": 1922744000, "start_ns": 2563008, "times": 814, "share": 0.8840740466224243}, {"kind": "irq", "what": {"kind": "irq", "irq": 11, "name": "arch_timer"}, "duration_ns": 192745168, "start_ns": 813248, "times": 547, "share": 0.08862386289629769}], "culprit": "higher-priority-task", "phases": {"unarmed": [{"kind": "higher-priority-task", "what": {"kind": "task", "comm": "lab-hog", "pid": 214, "prio": 1}, "duration_ns": 1922744000}], "before_fire": [{"kind": "timer-delay", "what": {"kind": "untraced", "task": {"comm": "rtlab/1", "pid": 251, "prio": 9}, "irqs_off": true}, "duration_ns": 122944}], "waiting": [{"kind": "irq", "what": {"kind": "irq", "irq": 11, "name": "arch_timer"}, "duration_ns": 68080}]}, "caveats": []}"#,
    )
    .unwrap();
    let told = spike::tell(&x);
    for said in [
        "The thread armed this timer only at +2174542 us, past its deadline: it had not gone back to sleep since its previous wake-up; meanwhile lab-hog (pid 214, real-time priority 98), of higher priority, held the CPU for 1922744 us.",
        "The timer interrupt came 202 us after the arming: 123 us with no event while rtlab/1",
    ] {
        assert!(told.contains(said), "missing {said:?} in:\n{told}");
    }
    assert!(!told.contains("2174745 us late"), "{told}");
    x.milestones.timer_fired_ns = Some(2_174_545_000);
    assert!(spike::tell(&x).contains(" It fired at once (+2174545 us)."));
}

/// Issue #44: a pattern is named only where its handler took a real part of the delay: the
/// timer storm of told.json, its handler's share cut to 1 % (a task holding the rest), is no
/// cause and gets no "Pattern: ... Fix: ..." sentence.
#[test]
fn a_pattern_is_named_only_with_its_evidence() {
    let told: serde_json::Value = serde_json::from_str(&fixture("explanations/told.json")).unwrap();
    let mut storm: Explanation = told
        .as_array()
        .unwrap()
        .iter()
        .map(|c| serde_json::from_value::<Explanation>(c["explanation"].clone()).unwrap())
        .find(|x| {
            x.parts
                .iter()
                .any(|p| p.inside.as_ref().is_some_and(|i| i.pattern.is_some()))
        })
        .expect("told.json has a timer storm");
    assert!(spike::tell(&storm).contains("Pattern: concurrent hrtimer expiries"));
    for p in &mut storm.parts {
        if p.inside.as_ref().is_some_and(|i| i.pattern.is_some()) {
            p.share = 0.01;
        }
    }
    let story = spike::tell(&storm);
    assert!(!story.contains("Pattern:"), "{story}");
    assert!(
        story.contains("local_timer interrupt"),
        "the handler is still told: {story}"
    );
}

/// Issue #44: RT throttling is told as such, with the sysctl that sets it and its fix, once.
#[test]
fn rt_throttling_is_told_with_its_sysctl() {
    let told: serde_json::Value = serde_json::from_str(&fixture("explanations/told.json")).unwrap();
    let mut x: Explanation = told
        .as_array()
        .unwrap()
        .iter()
        .map(|c| serde_json::from_value::<Explanation>(c["explanation"].clone()).unwrap())
        .find(|x| x.culprit == model::explain::PartKind::HigherPriorityTask)
        .expect("told.json has a hog");
    for p in x.parts.iter_mut().filter(|p| p.kind == x.culprit) {
        p.kind = model::explain::PartKind::RtThrottling;
    }
    if let Some(phases) = x.phases.as_mut() {
        for c in phases.waiting.iter_mut().filter(|c| c.kind == x.culprit) {
            c.kind = model::explain::PartKind::RtThrottling;
        }
    }
    x.culprit = model::explain::PartKind::RtThrottling;
    let story = spike::tell(&x);
    assert!(
        story.contains("RT throttling gave hog (pid 29010"),
        "{story}"
    );
    assert_eq!(story.matches("RT throttling: once").count(), 1, "{story}");
    assert!(
        story.contains("kernel.sched_rt_runtime_us to -1"),
        "{story}"
    );
    assert!(
        story.contains("Fix: let the busy real-time task sleep"),
        "{story}"
    );
}

/// Issue #44: the "why" lines under a `--trace` run's table say what was not explained (the
/// worst spikes older than the trace buffer), not only what was.
#[test]
fn the_why_lines_say_what_the_buffer_no_longer_held() {
    let mut t: TraceCapture =
        serde_json::from_str(&fixture("explanations/trace_capture_before_explain2.json")).unwrap();
    assert!(!t.explanations.is_empty());
    t.notes = vec![
        "8 of the worst spikes (CPU 1 cycle 812, ...) are older than the trace buffer held at the end"
            .to_string(),
    ];
    let lines = crate::explain::capture_lines(&t);
    assert!(lines.starts_with("why (from the kernel trace"), "{lines}");
    assert!(
        lines.contains("  note: 8 of the worst spikes (CPU 1 cycle 812, ...) are older"),
        "{lines}"
    );
}

/// Issue #44: each explanation says how much of the delay the trace shows, the same words in
/// `rtlab explain` and the report: the idle stretch before a late timer interrupt is time the
/// trace cannot see into; a hog's hold is seen.
#[test]
fn each_explanation_says_how_much_of_the_delay_the_trace_shows() {
    let told: serde_json::Value = serde_json::from_str(&fixture("explanations/told.json")).unwrap();
    let xs: Vec<Explanation> = told
        .as_array()
        .unwrap()
        .iter()
        .map(|c| serde_json::from_value(c["explanation"].clone()).unwrap())
        .collect();
    for x in &xs {
        let said = spike::seen(x);
        let unseen = x.unseen_ns();
        assert!(unseen <= x.latency_ns, "{x:?}");
        if unseen == 0 {
            assert_eq!(
                said,
                "accounted for: the trace shows what took all of the delay"
            );
        } else {
            let shown = (x.latency_ns - unseen) as f64 * 100.0 / x.latency_ns as f64;
            assert!(
                said.starts_with(&format!(
                    "accounted for: the trace shows what took {shown:.1} %"
                )),
                "{said}"
            );
            assert!(said.contains("cannot see into"), "{said}");
        }
        // The report's page says it in the same words as `rtlab explain`.
        assert!(crate::explain::explanation_text(x).contains("accounted for: the trace shows"));
    }
    assert!(
        xs.iter().any(|x| x.unseen_ns() > 0) && xs.iter().any(|x| x.unseen_ns() == 0),
        "told.json covers both"
    );
}

/// Issue #44: a thread that slept on a page fault's read before it armed its timer past the
/// deadline (the truth corpus's `page-fault`) is told so, and a task that turned interrupts
/// off until the timer interrupt (where the trace shows it) is told as keeping them off; a
/// heading names the task a late interrupt came in.
#[test]
fn a_thread_asleep_and_interrupts_kept_off_are_told_as_such() {
    let x: Explanation = serde_json::from_str(
        r#"{"cpu": 1, "pid": 11140, "comm": "faulting", "prio": 49, "latency_ns": 15068000, "deadline_ns": 43705120145220, "cycle": null, "milestones": {"timer_armed_ns": 15048000, "timer_fired_ns": 15066000, "woken_ns": 15068000, "switched_in_ns": 15068000, "woken_running": true}, "parts": [{"kind": "blocked", "what": {"kind": "asleep", "state": "D"}, "duration_ns": 13055000, "start_ns": 791000, "times": 2, "share": 0.866}, {"kind": "return", "what": {"kind": "clock-read"}, "duration_ns": 2013000, "start_ns": 0, "times": 2, "share": 0.134}], "culprit": "blocked", "phases": {"unarmed": [{"kind": "blocked", "what": {"kind": "asleep", "state": "D"}, "duration_ns": 13055000}], "before_fire": [], "waiting": []}, "caveats": []}"#,
    )
    .unwrap();
    let told = spike::tell(&x);
    for said in [
        "past its deadline: it slept on something else than its timer since its previous wake-up; meanwhile the thread itself, asleep in state D (I/O, a page fault or a lock) for 13055 us",
        "Largest part: the thread asleep",
    ] {
        assert!(told.contains(said), "missing {said:?} in:\n{told}");
    }
    assert_eq!(agent::main_cause(&x), "the thread asleep");
    let off: Explanation = serde_json::from_str(
        r#"{"cpu": 1, "pid": 500, "comm": "rt", "prio": 49, "latency_ns": 40000, "deadline_ns": 100001000000, "cycle": null, "milestones": {"timer_fired_ns": 37000, "woken_ns": 38000, "switched_in_ns": 40000}, "parts": [{"kind": "non-preemptible", "what": {"kind": "task", "comm": "worker", "pid": 600, "prio": 120}, "duration_ns": 38000, "start_ns": 0, "times": 2, "share": 0.95}], "culprit": "non-preemptible", "phases": {"unarmed": [], "before_fire": [{"kind": "non-preemptible", "what": {"kind": "task", "comm": "worker", "pid": 600, "prio": 120}, "duration_ns": 36000}], "waiting": []}, "caveats": []}"#,
    )
    .unwrap();
    let told = spike::tell(&off);
    assert!(
        told.contains("The timer interrupt came 37 us late: worker (pid 600, normal (nice 0)) kept interrupts off for 36 us"),
        "{told}"
    );
    let mut late = off.clone();
    late.culprit = model::explain::PartKind::TimerDelay;
    late.parts[0].kind = model::explain::PartKind::TimerDelay;
    late.parts[0].what = model::explain::Agent::Untraced {
        task: Some(model::explain::Task::new("kmsg-writer", 32716, 120)),
        irqs_off: true,
    };
    assert_eq!(
        agent::main_cause(&late),
        "timer interrupt delay while kmsg-writer (pid 32716) ran"
    );
    // The thread itself running through its late interrupt names nobody.
    late.parts[0].what = model::explain::Agent::Untraced {
        task: Some(model::explain::Task::new("rt", 500, 49)),
        irqs_off: true,
    };
    assert_eq!(agent::main_cause(&late), "timer interrupt delay");
}
