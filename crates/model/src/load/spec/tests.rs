use proptest::prelude::*;

use super::*;

fn parse(text: &str) -> LoadSpec {
    LoadSpec::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn error(text: &str) -> String {
    LoadSpec::parse(text).unwrap_err().to_string()
}

#[test]
fn the_issue_example() {
    let spec = parse("cpu:60%,timer-storm:200,messaging:4x10,io:64M");
    let kinds: Vec<_> = spec.generators.iter().map(|g| g.kind.clone()).collect();
    assert_eq!(
        kinds,
        [
            GeneratorKind::Cpu { percent: 60 },
            GeneratorKind::TimerStorm { threads: 200 },
            GeneratorKind::Messaging {
                groups: 4,
                fds: 10,
                transport: Transport::Socket,
                tasks: TaskKind::Thread
            },
            GeneratorKind::Io {
                bytes: 64 << 20,
                workers: 1
            },
        ]
    );
    assert!(spec.generators.iter().all(|g| g.cpus.is_none()));
    assert_eq!(
        spec.to_string(),
        "cpu:60%,timer-storm:200,messaging:4x10:socket:thread,io:64M:1"
    );
}

#[test]
fn defaults() {
    let spec = parse("cpu,timer-storm,messaging,memory,io,net,fork");
    assert_eq!(
        spec.to_string(),
        "cpu:100%,timer-storm:200,messaging:4x10:socket:thread,memory,io:64M:1,net:1,fork:1"
    );
}

#[test]
fn placement_with_commas_in_the_cpu_list() {
    let spec = parse("cpu:100%@0-1,3,timer-storm@2");
    assert_eq!(spec.generators.len(), 2);
    assert_eq!(
        spec.generators[0].cpus,
        Some(CpuSet::parse_list("0-1,3").unwrap())
    );
    assert_eq!(spec.generators[1].cpus, Some(CpuSet::from_cpus([2])));
    assert_eq!(spec.to_string(), "cpu:100%@0-1,3,timer-storm:200@2");
}

#[test]
fn options_by_form_in_any_order() {
    let spec = parse("messaging:process:pipe:2x5,net:udp:4,net:8:tcp,memory:256M:2,io:1G:3");
    assert_eq!(
        spec.to_string(),
        "messaging:2x5:pipe:process,net:udp:4,net:tcp:8,memory:256M:2,io:1G:3"
    );
    assert_eq!(parse("memory:auto:3").to_string(), "memory:auto:3");
    assert_eq!(parse("cpu:60").to_string(), "cpu:60%");
}

#[test]
fn commands_keep_commas_colons_and_at_signs_inside_quotes() {
    let spec = parse(r#"cmd:"stress-ng --cpu 2 --taskset 0,1 --timeout 1:00"@1,cpu:30%"#);
    assert_eq!(spec.generators.len(), 2);
    assert_eq!(
        spec.generators[0].kind,
        GeneratorKind::Cmd {
            command: "stress-ng --cpu 2 --taskset 0,1 --timeout 1:00".into()
        }
    );
    assert_eq!(spec.generators[0].cpus, Some(CpuSet::from_cpus([1])));
    let single = parse("cmd:'echo \"a@b\"'");
    assert_eq!(
        single.generators[0].kind,
        GeneratorKind::Cmd {
            command: "echo \"a@b\"".into()
        }
    );
    assert_eq!(single.to_string(), "cmd:'echo \"a@b\"'");
    assert_eq!(parse("cmd:sleep 5").to_string(), "cmd:\"sleep 5\"");
}

#[test]
fn malformed_specs_name_the_item_and_the_fix() {
    for (text, expect) in [
        ("", "empty"),
        ("  ", "empty"),
        (
            "gpu:50%",
            "unknown generator 'gpu'; choose from cpu, timer-storm",
        ),
        ("cpu:140%", "'cpu:140%': the duty cycle must be 1% to 100%"),
        ("cpu:0%", "1% to 100%"),
        ("cpu:half", "'half' is not a duty cycle"),
        ("cpu:50%:2", "too many arguments; usage: cpu[:PERCENT%]"),
        ("io:64", "size '64' has no unit; write 64K, 64M or 64G"),
        ("memory:64", "has no unit"),
        ("io:64MB", "unknown size unit 'MB'"),
        ("io:512K", "too small; the least is 1M"),
        ("io:99999999999G", "too large"),
        ("timer-storm:0", "threads must be 1 to 10000"),
        ("timer-storm:many", "'many' is not a number of threads"),
        ("messaging:100x100", "20000 tasks is more than the limit"),
        ("messaging:4x", "not a number of senders per group"),
        (
            "messaging:4x10:carrier-pigeon",
            "unexpected 'carrier-pigeon'",
        ),
        ("messaging:pipe:socket", "unexpected 'socket'"),
        (
            "net:sctp",
            "unexpected 'sctp'; usage: net[:tcp|udp][:FLOWS]",
        ),
        ("cpu,,io", "an empty item between commas"),
        ("cpu,", "an empty item between commas"),
        ("cpu::", "an empty argument"),
        ("cpu@", "the CPU list after '@' is empty"),
        ("cpu@x", "bad CPU list 'x' after '@'"),
        ("cmd:", "give the command"),
        ("cmd:\"unterminated", "a quote is not closed"),
    ] {
        let message = error(text);
        assert!(message.contains(expect), "{text:?}: {message}");
        assert!(!message.contains('\n'), "{message}");
    }
}

#[test]
fn cpus_must_be_online() {
    let online = CpuSet::parse_list("0-1").unwrap();
    parse("cpu@0-1,io").check_cpus(&online).unwrap();
    let e = parse("cpu@1-2").check_cpus(&online).unwrap_err();
    assert_eq!(
        e.to_string(),
        "load spec 'cpu:100%@1-2': CPU 2 is not online (online: 0-1)"
    );
}

#[test]
fn sizes() {
    assert_eq!(parse_size("64M"), Ok(64 << 20));
    assert_eq!(parse_size("3KiB"), Ok(3 << 10));
    assert_eq!(parse_size("2G"), Ok(2 << 30));
    assert_eq!(parse_size("100B"), Ok(100));
    assert!(parse_size("M").is_err());
    assert!(parse_size("-1M").is_err());
    assert_eq!(format_size(64 << 20), "64M");
    assert_eq!(format_size(1536 << 10), "1536K");
    assert_eq!(format_size(100), "100B");
}

fn any_kind() -> impl Strategy<Value = GeneratorKind> {
    prop_oneof![
        (1u8..=100).prop_map(|percent| GeneratorKind::Cpu { percent }),
        (1u32..=10_000).prop_map(|threads| GeneratorKind::TimerStorm { threads }),
        (1u32..=50, 1u32..=50, any::<bool>(), any::<bool>()).prop_map(|(g, f, p, t)| {
            GeneratorKind::Messaging {
                groups: g,
                fds: f,
                transport: if p {
                    Transport::Pipe
                } else {
                    Transport::Socket
                },
                tasks: if t {
                    TaskKind::Process
                } else {
                    TaskKind::Thread
                },
            }
        }),
        (proptest::option::of(1u64..=4096), 1u32..=64).prop_map(|(m, workers)| {
            GeneratorKind::Memory {
                bytes: m.map(|m| m << 20),
                workers,
            }
        }),
        (1u64..=4096, 1u32..=64).prop_map(|(m, workers)| GeneratorKind::Io {
            bytes: m << 20,
            workers
        }),
        (0u8..3, 1u32..=64).prop_map(|(p, flows)| GeneratorKind::Net {
            protocols: [Protocols::Tcp, Protocols::Udp, Protocols::Both][p as usize],
            flows
        }),
        (1u32..=64).prop_map(|workers| GeneratorKind::Fork { workers }),
        "[a-z0-9 ,:@-]{1,30}".prop_filter_map("blank", |c| {
            let c = c.trim().to_string();
            (!c.is_empty()).then_some(GeneratorKind::Cmd { command: c })
        }),
    ]
}

proptest! {
    #[test]
    fn display_parses_back(
        kinds in proptest::collection::vec(any_kind(), 1..5),
        cpus in proptest::collection::vec(proptest::option::of(proptest::collection::btree_set(0u32..64, 1..4)), 5),
    ) {
        let spec = LoadSpec {
            generators: kinds
                .into_iter()
                .zip(cpus)
                .map(|(kind, cpus)| GeneratorSpec { kind, cpus: cpus.map(CpuSet::from_cpus) })
                .collect(),
        };
        let text = spec.to_string();
        prop_assert_eq!(LoadSpec::parse(&text), Ok(spec), "{}", text);
    }

    #[test]
    fn never_panics(text in ".{0,60}") {
        let _ = LoadSpec::parse(&text);
    }
}

/// Found by fuzzing (target model_load_spec): a command holding both kinds of quote was
/// printed inside single quotes and no longer read (`measure --load` hands the printed spec to
/// its load child, which reads it again).
#[test]
fn a_command_with_both_quotes_prints_as_it_reads() {
    for text in [
        r#"cmd:"'"N"#,
        r#"cmd:"sh -c 'echo a, b'""#,
        r#"cmd:'say "hi"'@1"#,
        r#"cmd:a"'"b'"'"#,
        r#"cmd:"a',7"b@u:0-1@0-4"#,
        r#"cmd:"a',3"b]@,0UU%@0-4"#,
    ] {
        let spec = LoadSpec::parse(text).unwrap();
        let printed = spec.to_string();
        assert_eq!(
            LoadSpec::parse(&printed),
            Ok(spec),
            "{text} printed as {printed}"
        );
    }
}

#[test]
fn bytes_read_in_the_largest_unit_reached() {
    assert_eq!(format_bytes(0.0), "0 B");
    assert_eq!(format_bytes(1023.0), "1023 B");
    assert_eq!(format_bytes(1536.0), "1.5 KiB");
    assert_eq!(format_bytes(200.0 * (1u64 << 30) as f64), "200.0 GiB");
    assert_eq!(format_bytes(3.0 * (1u64 << 40) as f64), "3.0 TiB");
}
