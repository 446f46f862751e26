//! Decoding on fields as this machine's kernel (6.18) and trace-cmd 3.1 print them.

use super::*;
use crate::line::{Line, parse};

fn kind(line: &str) -> Kind<'_> {
    match parse(line) {
        Line::Event(e) => decode(&e),
        other => panic!("not an event: {other:?}"),
    }
}

#[test]
fn sched_switch_in_both_formats() {
    let k = kind(
        "      cyclictest-30756   [000] d..2. 13555.497874: sched_switch: prev_comm=bash prev_pid=30756 prev_prio=120 prev_state=R+ ==> next_comm=migration/0 next_pid=18 next_prio=0",
    );
    let Kind::Switch {
        prev,
        prev_state,
        next,
    } = k
    else {
        panic!("{k:?}")
    };
    assert_eq!((prev.comm, prev.pid, prev.prio), ("bash", 30756, 120));
    assert_eq!(prev_state, "R+");
    assert_eq!((next.comm, next.pid, next.prio), ("migration/0", 18, 0));
    assert!(next.is_rt() && !prev.is_rt());
    assert_eq!(next.describe_prio(), "real-time priority 99");

    let k = kind(
        "tcprobe:             bash-31634 [001] 13659.399797: sched_switch:         bash:31634 [120] R ==> bash:31637 [120]",
    );
    let Kind::Switch {
        prev,
        prev_state,
        next,
    } = k
    else {
        panic!("{k:?}")
    };
    assert_eq!((prev.pid, prev_state, next.pid), (31634, "R", 31637));

    // A task name with spaces.
    let k = kind(
        "x-1 [000] d..2. 1.000000: sched_switch: prev_comm=Web Content prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120",
    );
    let Kind::Switch { prev, .. } = k else {
        panic!("{k:?}")
    };
    assert_eq!(prev.comm, "Web Content");
}

#[test]
fn wakeups_migrations_and_interrupts() {
    let k = kind(
        "      cyclictest-30756   [000] dN.4. 13555.497871: sched_wakeup: comm=migration/0 pid=18 prio=0 target_cpu=000",
    );
    assert!(
        matches!(
            k,
            Kind::Wakeup {
                task: Task {
                    pid: 18,
                    prio: 0,
                    ..
                },
                target_cpu: Some(0)
            }
        ),
        "{k:?}"
    );
    let k = kind(
        "tcprobe:       cyclictest-31637 [001] 13659.399974: sched_wakeup:         migration/1:21 [0] CPU:001",
    );
    assert!(
        matches!(
            k,
            Kind::Wakeup {
                task: Task {
                    comm: "migration/1",
                    pid: 21,
                    prio: 0
                },
                target_cpu: Some(1)
            }
        ),
        "{k:?}"
    );
    let k = kind(
        "tcprobe:      migration/1-21    [001] 13659.399980: sched_migrate_task:   comm=bash pid=31637 prio=120 orig_cpu=1 dest_cpu=0",
    );
    assert!(
        matches!(
            k,
            Kind::Migrate {
                orig_cpu: 1,
                dest_cpu: 0,
                ..
            }
        ),
        "{k:?}"
    );
    let k = kind(
        "          <idle>-0       [001] d.h1. 13555.498083: irq_handler_entry: irq=36 name=virtio1-req.0",
    );
    assert_eq!(
        k,
        Kind::IrqEntry {
            irq: 36,
            name: "virtio1-req.0"
        }
    );
    let k = kind(
        "          <idle>-0       [001] d.h1. 13555.498085: irq_handler_exit: irq=36 ret=handled",
    );
    assert_eq!(k, Kind::IrqExit { irq: 36 });
    let k = kind(
        "tcprobe:           <idle>-0     [000] 13659.400017: softirq_entry:        vec=7 [action=SCHED]",
    );
    assert_eq!(
        k,
        Kind::SoftirqEntry {
            vec: 7,
            action: "SCHED"
        }
    );
    let k = kind(
        "tcprobe:           <idle>-0     [000] 13659.400019: softirq_exit:         vec=7 [action=SCHED]",
    );
    assert_eq!(k, Kind::SoftirqExit { vec: 7 });
}

#[test]
fn hrtimers_in_both_formats() {
    let k = kind(
        "          <idle>-0       [001] d.h1. 13555.496016: hrtimer_expire_entry: hrtimer=0000000009a021c4 function=tick_nohz_handler now=13555496014195",
    );
    assert_eq!(
        k,
        Kind::HrtimerExpireEntry {
            hrtimer: Timer::Text("0000000009a021c4"),
            function: "tick_nohz_handler",
            now_ns: 13_555_496_014_195
        }
    );
    let k = kind(
        "tcprobe:           <idle>-0     [000] 13659.400009: hrtimer_expire_entry: hrtimer=0xffff888627c1c6f8 now=13659400008337 function=tick_nohz_handler/0x0",
    );
    assert_eq!(
        k,
        Kind::HrtimerExpireEntry {
            hrtimer: Timer::Text("0xffff888627c1c6f8"),
            function: "tick_nohz_handler",
            now_ns: 13_659_400_008_337
        }
    );
    let k = kind(
        "tcprobe:           <idle>-0     [000] 13659.398621: hrtimer_start:        hrtimer=0xffff888627c1c6f8 function=tick_nohz_handler/0x0 expires=13659400000000 softexpires=13659400000000",
    );
    assert_eq!(
        k,
        Kind::HrtimerStart {
            hrtimer: Timer::Text("0xffff888627c1c6f8"),
            function: "tick_nohz_handler",
            expires_ns: 13_659_400_000_000
        }
    );
}

#[test]
fn markers_work_and_the_rest() {
    let k = kind(
        "                    <...>-5642  [000]   279.524651: print:                tracing_mark_write: rtlab: break: CPU 1 woke 987654 ns late",
    );
    assert_eq!(
        k,
        Kind::Marker {
            text: "rtlab: break: CPU 1 woke 987654 ns late"
        }
    );
    let k = kind(
        "       cyclictest-1  [000] ..... 5.000000: tracing_mark_write: hit latency threshold (52 > 50)",
    );
    assert_eq!(
        k,
        Kind::Marker {
            text: "hit latency threshold (52 > 50)"
        }
    );
    let k = kind(
        "tcprobe:      kworker/1:2-27473 [001] 13659.427930: workqueue_execute_start: work struct 0xffff8881025a9820: function virtio_transport_tx_work",
    );
    assert_eq!(
        k,
        Kind::WorkStart {
            function: "virtio_transport_tx_work"
        }
    );
    let k = kind("x-1 [000] d.h.. 1.000000: local_timer_entry: vector=236");
    assert_eq!(
        k,
        Kind::VectorEntry {
            what: "local_timer"
        }
    );
    let k = kind("x-1 [000] d.h.. 1.000000: ipi_send_cpu: cpu=1 callsite=x callback=y");
    assert_eq!(
        k,
        Kind::Ipi {
            what: "ipi_send_cpu"
        }
    );
    let k = kind("x-1 [000] d.h.. 1.000000: sched_switch: garbage");
    assert_eq!(k, Kind::Other);
    let k = kind("x-1 [000] d.h.. 1.000000: kmem_cache_alloc: call_site=x");
    assert_eq!(k, Kind::Other);
}

#[test]
fn values_run_to_the_next_key() {
    assert_eq!(value("a=1 b=two words c=3", "b"), Some("two words"));
    assert_eq!(value("ab=1 b=2", "b"), Some("2"));
    assert_eq!(value("a=1", "b"), None);
    assert_eq!(value("a=", "a"), Some(""));
}

proptest::proptest! {
    #[test]
    fn never_panics(fields in "\\PC{0,80}", which in 0usize..12) {
        let name = ["sched_switch", "sched_waking", "sched_wakeup", "sched_migrate_task",
            "irq_handler_entry", "softirq_entry", "hrtimer_start", "hrtimer_expire_entry",
            "workqueue_execute_start", "print", "irq_disable", "local_timer_entry"][which];
        let _ = decode_fields(name, &fields);
    }
}

/// Found by fuzzing (target trace_explain): a wake-up's `target_cpu=19999999` decoded as is,
/// and the explain pass grew its per-CPU state to that many CPUs (1.7 GB and seconds for a
/// 683-line trace). CPU fields beyond `MAX_CPU` now leave the event undecoded.
#[test]
fn cpu_fields_beyond_max_cpu_do_not_decode() {
    let head = "x-1 [000] d.h.. 1.000000:";
    for fields in [
        "sched_waking: comm=a pid=2 prio=120 target_cpu=19999999",
        "sched_wakeup: comm=a pid=2 prio=120 target_cpu=18446744073709551616",
        "sched_wakeup: a:2 [120] success=1 CPU:8192",
        "sched_migrate_task: comm=a pid=2 prio=120 orig_cpu=0 dest_cpu=4000000000",
        "sched_migrate_task: comm=a pid=2 prio=120 orig_cpu=-1 dest_cpu=0",
    ] {
        assert_eq!(kind(&format!("{head} {fields}")), Kind::Other, "{fields}");
    }
    let waking = |target: &str| match kind(&format!(
        "{head} sched_waking: comm=a pid=2 prio=120 target_cpu={target}"
    )) {
        Kind::Waking { target_cpu, .. } => target_cpu,
        other => panic!("{other:?}"),
    };
    assert_eq!(waking("8191"), Some(8191));
    assert_eq!(
        waking("x"),
        None,
        "not a number: the event's own CPU stands in"
    );
}

/// The pairs as the first version found them, a byte at a time: the reference.
fn pairs_byte_by_byte(text: &str) -> Vec<(&str, &str)> {
    let b = text.as_bytes();
    let mut keys = Vec::new();
    let mut i = 0;
    while i < b.len() && keys.len() < Pairs::MAX {
        if i == 0 || b[i - 1] == b' ' {
            let mut j = i;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            if j > i && j < b.len() && b[j] == b'=' {
                keys.push((i, j));
                i = j + 1;
                continue;
            }
            i = j.max(i + 1);
            continue;
        }
        i += 1;
    }
    (0..keys.len())
        .map(|k| {
            let end = keys.get(k + 1).map_or(text.len(), |n| n.0);
            (
                &text[keys[k].0..keys[k].1],
                text[keys[k].1 + 1..end].trim_ascii_end(),
            )
        })
        .collect()
}

proptest::proptest! {
    /// Keys found and values read as the byte-at-a-time scan finds them, whatever order they
    /// are asked in.
    #[test]
    fn pairs_are_found_as_byte_by_byte(
        words in proptest::collection::vec("[a-z_]{0,3}(=[a-z0-9 ]{0,12})?|==>| +|[é=x]{1,3}", 0..24),
        ask in proptest::collection::vec(0usize..30, 0..30),
    ) {
        let text = words.join(" ");
        let want = pairs_byte_by_byte(&text);
        let p = Pairs::of(&text);
        for &k in &ask {
            let key = want.get(k).map_or("nokey", |w| w.0);
            // The first pair with the key: what a lookup gives.
            let first = want.iter().find(|w| w.0 == key).map(|w| w.1);
            proptest::prop_assert_eq!(p.get(key), first, "{:?} in {:?}", key, text);
        }
    }
}

proptest::proptest! {
    /// Read straight off the expected layout, the values are the ones the pairs give; a text
    /// laid out otherwise is left to the pairs.
    #[test]
    fn values_in_order_are_the_pairs_values(
        words in proptest::collection::vec("(a|b|c|d)=[a-z0-9 =]{0,6}|==>| +|x", 0..10),
        take in 1usize..4,
    ) {
        let text = words.join(" ");
        let p = Pairs::of(&text);
        for keys in [["a", "b", "c"], ["b", "c", "d"], ["a", "c", "d"]] {
            let got = match take {
                1 => pairs::in_order(&text, [keys[0]]).map(|v| v.to_vec()),
                2 => pairs::in_order(&text, [keys[0], keys[1]]).map(|v| v.to_vec()),
                _ => pairs::in_order(&text, keys).map(|v| v.to_vec()),
            };
            let Some(got) = got else { continue };
            let want: Vec<Option<&str>> = keys[..got.len()].iter().map(|k| p.get(k)).collect();
            let got: Vec<Option<&str>> = got.into_iter().map(Some).collect();
            proptest::prop_assert_eq!(got, want, "{:?}", text);
        }
    }
}

#[test]
fn the_kernels_layout_is_read_straight_and_any_other_as_pairs() {
    let k = "prev_comm=a b prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=c next_pid=2 next_prio=9";
    assert_eq!(
        pairs::in_order(k, ["prev_comm", "prev_pid"]),
        Some(["a b", "1"])
    );
    // An older kernel's wake-up (`success=1` between): not the layout asked for.
    let old = "comm=rt pid=5 prio=9 success=1 target_cpu=001";
    assert_eq!(
        pairs::in_order(old, ["comm", "pid", "prio", "target_cpu"]),
        None
    );
    let Some((task, cpu)) = wakeup(old) else {
        panic!("read as pairs")
    };
    assert_eq!((task.pid, cpu), (5, Some(1)));
}
