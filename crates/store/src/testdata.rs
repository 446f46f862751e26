//! A realistic measurement for the store's tests, built through the model's own constructors
//! (`Accumulator::record`, `Histogram::record`, `cpu_result`, `aggregate`) as a real run is:
//! three CPUs of a heterogeneous host, a sample above the histogram's range, spikes, the
//! per-second series, overruns, warnings, a `--break` event, an achieved load with awkward
//! floating-point figures and an audit summary.

use model::audit::{AuditSummary, Counts, Profile, RtCpus, Status, SummaryItem};
use model::histogram::RANGE_END_NS;
use model::host::{CpuInfo, HostInfo};
use model::load::report::CpuBusy;
use model::load::{GeneratorReport, LoadReport};
use model::measure::{
    BreakEvent, CpuResult, MeasureParams, MeasureRun, Policy, RunStatus, SCHEMA, Series, Spike,
    Warning, aggregate, cpu_result,
};
use model::stats::Accumulator;
use model::{CpuSet, Histogram, Nanos};

/// Samples per one-second series slot (a 1 ms interval).
const PER_SLOT: u64 = 1_000;
/// Worst samples kept per CPU.
const SPIKES: usize = 20;

/// A deterministic stream of latencies around `base_ns` with rare large spikes.
fn samples(seed: u64, n: usize, base_ns: u64) -> Vec<u64> {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let r = state >> 33;
            match r % 1_000 {
                0 => base_ns * 20 + r % 400_000,
                1..=10 => base_ns * 3 + r % 20_000,
                _ => base_ns + r % 4_000,
            }
        })
        .collect()
}

/// One CPU as the sampler would record `values` (sample `i` at cycle `i`, 1 ms apart).
fn cpu(cpu: u32, tid: Option<u32>, values: &[u64], overruns: u64) -> CpuResult {
    let mut raw = Accumulator::new();
    let mut histogram = Histogram::new();
    let mut spikes = Vec::new();
    let mut series = Series {
        slot_ns: Nanos::SECOND,
        ..Series::default()
    };
    for (i, &ns) in values.iter().enumerate() {
        let cycle = i as u64;
        raw.record(ns);
        histogram.record(ns);
        spikes.push(Spike {
            latency_ns: ns,
            cycle,
            at_ns: cycle * 1_000_000,
            monotonic_ns: 81_234_567_890 + cycle * 1_000_000 + ns,
        });
        let slot = (cycle / PER_SLOT) as usize;
        if series.max_ns.len() <= slot {
            series.max_ns.resize(slot + 1, 0);
            series.count.resize(slot + 1, 0);
        }
        series.max_ns[slot] = series.max_ns[slot].max(ns);
        series.count[slot] += 1;
    }
    raw.overruns = overruns;
    spikes.sort_by_key(|s| (std::cmp::Reverse(s.latency_ns), s.cycle));
    spikes.truncate(SPIKES);
    cpu_result(cpu, tid, raw, histogram, spikes, series)
}

fn host() -> HostInfo {
    let cpu_info = |cpu: u32, big: bool| CpuInfo {
        cpu,
        package: Some(0),
        die: None,
        cluster: Some(u32::from(big)),
        core: Some(cpu),
        siblings: Some(CpuSet::from_cpus([cpu])),
        capacity: Some(if big { 1024 } else { 446 }),
        core_type: None,
        max_freq_khz: Some(if big { 2_400_000 } else { 1_800_000 }),
        model: Some(if big { "0x41:0xd0b" } else { "0x41:0xd05" }.to_string()),
        node: Some(0),
    };
    HostInfo {
        hostname: "rk3588-board".to_string(),
        kernel_release: "6.6.30-rt30-arm64".to_string(),
        kernel_version: "#1 SMP PREEMPT_RT Thu May 2 10:00:00 UTC 2024".to_string(),
        arch: "aarch64".to_string(),
        preempt_rt: true,
        preempt_model: Some("rt".to_string()),
        preempt_dynamic: false,
        preempt_model_source: Some("/sys/kernel/realtime".to_string()),
        cmdline: "console=ttyS2 isolcpus=2-3 nohz_full=2-3 rcu_nocbs=2-3".to_string(),
        cpu_model: Some("Rockchip RK3588".to_string()),
        clocksource: Some("arch_sys_counter".to_string()),
        available_clocksources: vec!["arch_sys_counter".to_string()],
        possible_cpus: CpuSet::from_cpus(0..4),
        online_cpus: CpuSet::from_cpus(0..4),
        isolated_cpus: CpuSet::from_cpus([2, 3]),
        nohz_full_cpus: CpuSet::from_cpus([2, 3]),
        cpuset_isolated_cpus: CpuSet::default(),
        sched_rt_runtime_us: Some(-1),
        sched_rt_period_us: Some(1_000_000),
        cpus: vec![
            cpu_info(0, false),
            cpu_info(1, false),
            cpu_info(2, true),
            cpu_info(3, true),
        ],
    }
}

fn load() -> LoadReport {
    let window = Nanos(29_998_765_432);
    let generator = |spec: &str, unit: &str, ops: u64, bytes: u64, cpu_ns: u64| GeneratorReport {
        spec: spec.to_string(),
        description: format!("{spec} as run"),
        cpus: CpuSet::from_cpus([0, 1]),
        tasks: 2,
        unit: unit.to_string(),
        ops,
        ops_per_sec: model::load::report::per_second(ops, window),
        bytes,
        bytes_per_sec: model::load::report::per_second(bytes, window),
        cpu_ns: Nanos(cpu_ns),
        cpu_share_percent: model::load::report::cpu_share_percent(Nanos(cpu_ns), window, 2),
        notes: vec!["cpu time read from /proc/self/task/*/stat".to_string()],
        ended_ns: None,
    };
    LoadReport {
        schema: model::load::report::LOAD_SCHEMA.to_string(),
        build: None,
        spec: "cpu:60%@0-1,messaging:4x10@0-1".to_string(),
        window_ns: window,
        warmup_ns: Nanos::from_secs(2),
        status: "complete".to_string(),
        cgroup: Some("/sys/fs/cgroup/cpuset/rtlab-load-4711".to_string()),
        generators: vec![
            generator("cpu:60%@0-1", "loop", 7_123_456_789, 0, 35_987_654_321),
            generator(
                "messaging:4x10@0-1",
                "message",
                3_141_592,
                314_159_200,
                11_111_111_111,
            ),
        ],
        cpu_busy: (0..4)
            .map(|cpu| CpuBusy {
                cpu,
                busy_percent: 100.0 / 3.0 + f64::from(cpu) * 0.1,
                steal_percent: 0.1 + 0.2,
            })
            .collect(),
    }
}

fn audit() -> AuditSummary {
    AuditSummary {
        schema: "rtlab.audit/1".to_string(),
        profile: Profile::Production,
        rt_cpus: RtCpus {
            cpus: CpuSet::from_cpus([2, 3]),
            source: "isolcpus".to_string(),
        },
        counts: Counts {
            pass: 31,
            warn: 4,
            info: 0,
            fail: 1,
            unknown: 2,
            error: 0,
        },
        top: vec![
            SummaryItem {
                id: "cpu.idle".to_string(),
                status: Status::Fail,
                summary: "deep idle states (exit latency 1500 us) are enabled".to_string(),
                fix: Some("boot parameter: cpuidle.off=1".to_string()),
            },
            SummaryItem {
                id: "irq.affinity".to_string(),
                status: Status::Warn,
                summary: "3 interrupts may run on the RT CPUs 2-3".to_string(),
                fix: None,
            },
        ],
    }
}

/// The realistic run: CPUs 0, 2 and 3 of an RK3588 board, stopped by `--break 1ms` on CPU 3.
pub(crate) fn realistic() -> MeasureRun {
    let mut cpu3 = samples(3, 4_000, 6_000);
    cpu3.push(RANGE_END_NS + 1_234_567);
    let cpus = vec![
        cpu(0, Some(4711), &samples(0, 3_500, 9_000), 0),
        cpu(2, Some(4712), &samples(2, 4_000, 4_000), 2),
        cpu(3, Some(4713), &cpu3, 1),
    ];
    let params = MeasureParams {
        engine: model::measure::Engine::User,
        cpus: CpuSet::from_cpus([0, 2, 3]),
        interval_ns: Nanos::MILLISECOND,
        periods: 30_000,
        duration_ns: Some(Nanos::from_secs(30)),
        cycles: None,
        aligned: true,
        offsets_ns: vec![Nanos::ZERO; 3],
        policy: Policy::Fifo,
        priority: 98,
        dl_runtime_ns: None,
        dl_period_ns: None,
        main_cpus: Some(CpuSet::from_cpus([1])),
        mlock: true,
        thread_stack_bytes: 1 << 20,
        dma_latency_us: Some(0),
        break_ns: Some(Nanos::MILLISECOND),
        budget_ns: Some(Nanos::from_us(200)),
        spikes: SPIKES as u32,
        checkpoint_ns: Some(Nanos::from_secs(5)),
        clock: "monotonic".to_string(),
    };
    let mut run = MeasureRun {
        schema: SCHEMA.to_string(),
        rtlab_version: "0.1.0".to_string(),
        build: Some(model::build::Build {
            version: "0.1.0".to_string(),
            commit: Some("8d89c6f1a2b3".to_string()),
            target: "aarch64-unknown-linux-musl".to_string(),
            libc: "musl".to_string(),
            linkage: "static".to_string(),
            profile: "dist".to_string(),
        }),
        status: RunStatus::BrokeThreshold,
        started_at: "2026-01-12T11:52:32.123456Z".to_string(),
        ended_at: "2026-01-12T11:52:36.004211Z".to_string(),
        elapsed_ns: Nanos(3_880_755_000),
        host: host(),
        params,
        all: aggregate(&cpus),
        cpus,
        break_event: Some(BreakEvent {
            cpu: 3,
            latency_ns: RANGE_END_NS + 1_234_567,
            cycle: 4_000,
            trace_frozen: true,
            tracefs: Some("/sys/kernel/tracing/instances/rtlab".to_string()),
        }),
        warnings: vec![
            Warning::new(
                "cpu-not-isolated",
                "CPU 0 is not isolated; boot with isolcpus=0",
            ),
            Warning::new("smt-sibling-busy", "CPU 2's sibling ran load"),
        ],
        load: Some(load()),
        audit: Some(audit()),
        import: Some(import_info()),
        trace: Some(trace()),
        noise: None,
        workload: None,
        timerlat: None,
    };
    // As every run is read back: an import's statistics at its resolution.
    run.as_given();
    run
}

/// An import section with every field set.
fn import_info() -> model::imported::ImportInfo {
    model::imported::ImportInfo {
        tool: "cyclictest 2.60".to_string(),
        format: "cyclictest-json".to_string(),
        file: "baseline.json".to_string(),
        resolution_ns: 1_000,
        command: Some("cyclictest -m -p 80 -i 1000".to_string()),
        quantity: model::imported::Quantity::WakeupLatency,
        notes: vec!["values are lower bounds within 1 us".to_string()],
        not_given: Vec::new(),
        not_stated: Vec::new(),
    }
}

/// A trace capture with one explained spike, every field set.
fn trace() -> model::explain::TraceCapture {
    use model::explain::{
        Agent, Cause, Caveat, Explanation, Milestones, Part, PartKind, Phases, Task, TraceCapture,
    };
    TraceCapture {
        instance: "rtlab-4242".to_string(),
        clock: "mono".to_string(),
        buffer_kb: 4096,
        events: vec![
            "sched/sched_switch".to_string(),
            "irq/irq_handler_entry".to_string(),
        ],
        missing: vec!["preemptirq/irq_disable: interrupts-off sections are not named".to_string()],
        frozen_by: "break".to_string(),
        window: "  hog-812 [001] d..2. 100.000010: sched_switch: x\n".to_string(),
        lost_events: 3,
        explanations: vec![Explanation {
            cpu: 1,
            pid: Some(4243),
            comm: Some("rtlab-cpu1".to_string()),
            prio: Some(4),
            latency_ns: 5_012_345,
            deadline_ns: 100_000_000_000,
            cycle: Some(17),
            milestones: Milestones {
                timer_armed_ns: None,
                timer_fired_ns: Some(2_100),
                woken_ns: Some(3_000),
                switched_in_ns: Some(5_010_000),
                woken_running: false,
            },
            parts: vec![Part {
                kind: PartKind::HigherPriorityTask,
                what: Agent::Task(Task::new("hog", 812, 0)),
                duration_ns: 5_007_000,
                start_ns: 3_000,
                times: 1,
                share: 0.999,
                inside: None,
                functions: None,
            }],
            culprit: PartKind::HigherPriorityTask,
            phases: Some(Phases {
                unarmed: Vec::new(),
                before_fire: Vec::new(),
                waiting: vec![Cause {
                    kind: PartKind::HigherPriorityTask,
                    what: Agent::Task(Task::new("hog", 812, 0)),
                    duration_ns: 5_007_000,
                }],
            }),
            old_story: None,
            caveats: vec![
                Caveat::LostEvents { times: 3 },
                Caveat::Said("timestamps have microsecond resolution".to_string()),
            ],
        }],
        notes: vec!["spike at cycle 3 is older than the trace buffer".to_string()],
    }
}

/// A small complete run on `host` with `kernel`, started at `started_at`, whose single CPU 1
/// measured `values`.
pub(crate) fn small(host_name: &str, kernel: &str, started_at: &str, values: &[u64]) -> MeasureRun {
    let mut run = realistic();
    run.status = RunStatus::Complete;
    run.host.hostname = host_name.to_string();
    run.host.kernel_release = kernel.to_string();
    run.started_at = started_at.to_string();
    run.cpus = vec![cpu(1, Some(100), values, 0)];
    run.all = aggregate(&run.cpus);
    run.params.cpus = CpuSet::from_cpus([1]);
    run.params.offsets_ns = vec![Nanos::ZERO];
    run.break_event = None;
    run.as_given();
    run
}

/// A store for a test: SQLite in memory, or a fresh PostgreSQL database on the test server
/// that is dropped with it.
pub(crate) struct TestStore {
    store: Option<crate::Store>,
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    drop_database: Option<(String, String)>,
}

impl TestStore {
    /// A fresh SQLite store in memory.
    pub(crate) fn sqlite() -> Option<TestStore> {
        Some(TestStore {
            store: Some(crate::Store::open_in_memory().unwrap()),
            drop_database: None,
        })
    }

    /// A fresh, empty database on the test PostgreSQL server; `None` (after saying why, and
    /// failing under CI) when there is none.
    #[cfg(feature = "postgres")]
    pub(crate) fn postgres() -> Option<TestStore> {
        let admin = testkit::live::postgres_or_skip()?;
        let name = format!("rtlab_test_{}", crate::RunId::random());
        let mut client = postgres::Client::connect(&admin, postgres::NoTls)
            .unwrap_or_else(|e| panic!("{}: {e}", crate::redact(&admin)));
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        let url = database_url(&admin, &name);
        let store = crate::Store::open_postgres(&url).unwrap();
        Some(TestStore {
            store: Some(store),
            drop_database: Some((admin, name)),
        })
    }

    /// Without PostgreSQL support there is nothing to test it on.
    #[cfg(not(feature = "postgres"))]
    pub(crate) fn postgres() -> Option<TestStore> {
        testkit::live::skip("built without the postgres feature");
        None
    }

    /// The address of this test's PostgreSQL database, for a second connection.
    pub(crate) fn url(&self) -> Option<String> {
        self.drop_database
            .as_ref()
            .map(|(admin, name)| database_url(admin, name))
    }
}

/// `admin` (an address) with its database replaced by `name`.
pub(crate) fn database_url(admin: &str, name: &str) -> String {
    let (base, query) = admin.split_once('?').unwrap_or((admin, ""));
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    let mut url = format!("{}/{name}", &base[..host_end]);
    if !query.is_empty() {
        url.push('?');
        url.push_str(query);
    }
    url
}

impl std::ops::Deref for TestStore {
    type Target = crate::Store;
    fn deref(&self) -> &crate::Store {
        self.store.as_ref().unwrap()
    }
}

impl std::ops::DerefMut for TestStore {
    fn deref_mut(&mut self) -> &mut crate::Store {
        self.store.as_mut().unwrap()
    }
}

impl Drop for TestStore {
    fn drop(&mut self) {
        drop(self.store.take());
        #[cfg(feature = "postgres")]
        if let Some((admin, name)) = self.drop_database.take()
            && let Ok(mut client) = postgres::Client::connect(&admin, postgres::NoTls)
        {
            let _ = client.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
        }
    }
}

/// The single integer a query returns (a count), through the store's own connection.
pub(crate) fn scalar(store: &crate::Store, sql: &str, args: &[crate::db::Arg<'_>]) -> i64 {
    store.db.query(sql, args).unwrap()[0].int(0).unwrap()
}

/// Runs a statement through the store's own connection (to damage a row on purpose).
pub(crate) fn exec(store: &crate::Store, sql: &str, args: &[crate::db::Arg<'_>]) {
    store.db.execute(sql, args).unwrap();
}
