//! `rtlab exec`: turns the arguments into a [`sys::launch::LaunchSetup`] under the rules of
//! [`tune::launch`] (priority, reservation, CPUs, the RT cpuset), starts the program, forwards
//! termination signals to it, checks that it locked its memory, and exits with its status.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use model::measure::Policy;
use model::{CpuSet, Nanos};
use sys::Root;
use sys::launch::{LaunchError, LaunchSetup};
use sys::sched::{PreparedPolicy, SchedParams};
use sys::signals::TerminationSignals;

use crate::console::{self, Console};
use crate::exit::{Exit, UsageError};
use crate::flags::ExecArgs;

/// How often rtlab looks at the program and its own signals while waiting.
const POLL: Duration = Duration::from_millis(20);

/// Runs `rtlab exec`.
pub fn run(args: &ExecArgs, root: &Root) -> Result<Exit> {
    let mut console = Console::new(args.quiet);
    let params = sched_params(args).map_err(UsageError)?;
    if let Some(priority) = params
        .filter(|p| p.policy.takes_priority())
        .map(|p| p.priority)
    {
        let irq_threads = sys::launch::irq_thread_priorities(root)
            .context("reading the IRQ threads' priorities")?;
        let warnings = tune::launch::judge_priority(priority, args.allow_prio_99, &irq_threads)
            .map_err(UsageError)?;
        for w in warnings {
            console.warn(&w);
        }
    }
    let (cgroup, granted) = placement(args, root, &mut console)?;
    if let Some(cpus) = &args.cpus {
        let online = sys::cpu::online(root).context("reading the online CPUs")?;
        tune::launch::check_cpus(cpus, &online, granted.as_ref()).map_err(UsageError)?;
    }
    let policy = params
        .map(|p| PreparedPolicy::new(&p))
        .transpose()
        .map_err(|e| UsageError(e.to_string()))?;
    let setup = LaunchSetup {
        cgroup,
        cpus: args.cpus.clone(),
        memlock: args.rlimit_memlock.map(|m| m.0),
        policy,
    };
    if args.dry_run {
        console::print_stdout(&dry_run_text(&args.command, &setup, granted.as_ref()))?;
        return Ok(Exit::Ok);
    }
    let signals = TerminationSignals::block().context("blocking SIGINT/SIGTERM")?;
    let program = args.command[0].to_string_lossy().into_owned();
    let pid = match sys::launch::spawn(root, &args.command, &setup) {
        Ok(pid) => pid,
        Err(LaunchError::Setup(e)) => {
            let hint = match (&setup.cgroup, args.deadline) {
                (Some(group), Some(_)) => {
                    format!(" (it had joined the RT cpuset {group}; --no-cpuset starts it outside)")
                }
                _ => String::new(),
            };
            return Err(UsageError(format!("{program}: {e}{hint}")).into());
        }
        Err(LaunchError::Exec {
            not_found, message, ..
        }) => {
            console::error(&format!("{program}: {message}"));
            return Ok(Exit::Status(tune::launch::exec_failure_status(not_found)));
        }
    };
    wait_for(
        pid,
        &program,
        args.check_after,
        root,
        &signals,
        &mut console,
    )
}

/// The scheduling the flags ask for; `None` keeps rtlab's own. `Err` names a policy and
/// priority that do not go together.
fn sched_params(args: &ExecArgs) -> Result<Option<SchedParams>, String> {
    if let Some(p) = args.fifo {
        return Ok(Some(SchedParams::new(Policy::Fifo, p)));
    }
    if let Some(p) = args.rr {
        return Ok(Some(SchedParams::new(Policy::Rr, p)));
    }
    let policy = match (args.policy, args.priority, args.deadline) {
        (None, None, None) => return Ok(None),
        (Some(p), _, _) => Policy::from(p),
        (None, Some(_), _) => Policy::Fifo,
        (None, None, Some(_)) => Policy::Deadline,
    };
    if policy == Policy::Deadline {
        let r = args.deadline.ok_or(
            "--policy deadline needs its reservation: --deadline RUNTIME/DEADLINE/PERIOD \
             (3ms/10ms/10ms)",
        )?;
        return Ok(Some(SchedParams {
            dl_deadline: Some(r.deadline),
            ..SchedParams::deadline(r.runtime, r.period)
        }));
    }
    if args.deadline.is_some() {
        return Err(format!(
            "--deadline is a SCHED_DEADLINE reservation, not for --policy {}; leave \
             --policy out or give --policy deadline",
            policy.as_str()
        ));
    }
    match (policy.takes_priority(), args.priority) {
        (true, Some(p)) => Ok(Some(SchedParams::new(policy, p))),
        (true, None) => Err(format!(
            "--policy {} needs -p/--priority PRIO (1-98; 49 keeps it below the IRQ threads' \
             default 50)",
            policy.as_str()
        )),
        (false, Some(p)) => Err(format!(
            "--priority {p} is for --policy fifo or rr; --policy {} has none (leave \
             --priority out)",
            policy.as_str()
        )),
        (false, None) => Ok(Some(SchedParams::new(policy, 0))),
    }
}

/// The RT cpuset to join, when `tune apply` made one and it is still there, with its CPUs.
fn placement(
    args: &ExecArgs,
    root: &Root,
    console: &mut Console,
) -> Result<(Option<String>, Option<CpuSet>)> {
    if args.no_cpuset || !args.journal.exists() {
        return Ok((None, None));
    }
    let Ok(group) = tune::rt_group(&args.journal) else {
        return Ok((None, None));
    };
    if !root.exists(&group) {
        console.warn(&format!(
            "{}: names the RT cpuset {group}, which is gone; starting the program where rtlab runs",
            args.journal.display()
        ));
        return Ok((None, None));
    }
    let cpus = sys::launch::cgroup_cpus(root, &group);
    Ok((Some(group), cpus))
}

/// What `--dry-run` prints: one line per thing rtlab would set.
fn dry_run_text(command: &[OsString], setup: &LaunchSetup, granted: Option<&CpuSet>) -> String {
    let words: Vec<String> = command
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    let policy = match setup.policy.as_ref().map(PreparedPolicy::params) {
        None => "inherited from rtlab".to_string(),
        Some(p) if p.policy == Policy::Deadline => format!(
            "SCHED_DEADLINE runtime {} deadline {} period {}",
            p.dl_runtime.unwrap_or(Nanos(0)),
            p.dl_deadline.or(p.dl_period).unwrap_or(Nanos(0)),
            p.dl_period.unwrap_or(Nanos(0))
        ),
        Some(p) => format!(
            "SCHED_{} priority {}",
            p.policy.as_str().to_uppercase(),
            p.priority
        ),
    };
    let cpuset = match (&setup.cgroup, granted) {
        (Some(g), Some(c)) => format!("{g} ({})", c.with_noun()),
        (Some(g), None) => g.clone(),
        (None, _) => "none (stays in rtlab's)".to_string(),
    };
    let cpus = setup
        .cpus
        .as_ref()
        .map_or("inherited".to_string(), ToString::to_string);
    let memlock = match setup.memlock {
        None => "inherited".to_string(),
        Some(None) => "unlimited".to_string(),
        Some(Some(b)) => format!("{b} bytes"),
    };
    format!(
        "program:        {}\npolicy:         {policy}\ncpuset:         {cpuset}\ncpus:           {cpus}\nRLIMIT_MEMLOCK: {memlock}\n",
        words.join(" ")
    )
}

/// Waits for the program, forwarding termination signals (`_blocked` keeps them blocked, so
/// they are taken here), checking its memory lock once `check_after` has passed; its end
/// becomes rtlab's exit status.
fn wait_for(
    pid: u32,
    program: &str,
    check_after: Nanos,
    root: &Root,
    _blocked: &TerminationSignals,
    console: &mut Console,
) -> Result<Exit> {
    let started = Instant::now();
    let check_at =
        (check_after.get() > 0).then(|| started + Duration::from_nanos(check_after.get()));
    let mut checked = false;
    loop {
        if let Some(exit) = sys::process::reap(pid, false).context("waiting for the program")? {
            return Ok(Exit::Status(tune::launch::exit_status(
                exit.code,
                exit.signal,
            )));
        }
        if let Some(at) = check_at
            && !checked
            && Instant::now() >= at
        {
            checked = true;
            if let Some(mem) = sys::launch::memory_use(root, pid)
                && let Some(w) =
                    tune::launch::memory_lock_warning(program, mem.locked_kib, mem.rss_kib)
            {
                console.warn(&w);
            }
        }
        // A signal from the terminal went to the program too (same process group): passing
        // it on would deliver it twice, and a program that stops gracefully on the first
        // Ctrl-C takes a second as "now".
        if let Some(got) = sys::launch::take_signal(POLL)
            && !got.from_terminal
        {
            sys::launch::forward_signal(pid, got.signal)
                .with_context(|| format!("forwarding {} to {program}", got.signal))?;
        }
    }
}
