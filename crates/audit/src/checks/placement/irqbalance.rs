//! `irq.irqbalance`: a running irqbalance daemon must keep IRQs off the RT CPUs, or it undoes
//! every IRQ placement within ten seconds.
//!
//! Which CPUs irqbalance leaves alone, as its `setup_banned_cpus` (cputree.c) decides: a
//! non-empty `IRQBALANCE_BANNED_CPUS` (a hex mask, deprecated) in its environment, else a
//! non-empty `IRQBALANCE_BANNED_CPULIST` (a CPU list), else the kernel's isolated CPUs
//! (`isolcpus=` domain CPUs) plus its `nohz_full` CPUs. The variables reach the daemon from
//! `/etc/default/irqbalance` (Debian) or `/etc/sysconfig/irqbalance` (RHEL) through the
//! service's EnvironmentFile. It has no command-line option for banned CPUs (`--banirq` bans
//! single IRQs). Releases before the automatic ban (about 2014) only honour the variables.

use model::CpuSet;
use model::audit::{Fix, Group, Severity};

use super::common::{cpus_word, split, task_list};
use crate::check::Check;
use crate::context::Ctx;
use crate::outcome::Outcome;

pub(super) const IRQBALANCE: Check = Check {
    id: "irq.irqbalance",
    title: "irqbalance and RT CPUs",
    group: Group::Placement,
    severity: Severity::Fail,
    why: "irqbalance rewrites IRQ affinities every ten seconds, moving IRQs back onto RT CPUs it has not been told to leave alone",
    run: irqbalance,
};

/// The service's environment files, Debian first.
const CONFIG_FILES: [&str; 2] = ["/etc/default/irqbalance", "/etc/sysconfig/irqbalance"];
const MASK_VAR: &str = "IRQBALANCE_BANNED_CPUS";
const LIST_VAR: &str = "IRQBALANCE_BANNED_CPULIST";

/// `KEY=value` assignments of a shell-style environment file: comments and blank lines
/// skipped, an `export ` prefix and one level of quotes removed. Later lines win.
pub fn env_file(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let l = l.strip_prefix("export ").unwrap_or(l);
            let (k, v) = l.split_once('=')?;
            let k = k.trim();
            if k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return None;
            }
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(v);
            Some((k.to_string(), v.to_string()))
        })
        .collect()
}

/// The last non-empty value of `key`.
fn var<'a>(vars: &'a [(String, String)], key: &str) -> Option<&'a str> {
    vars.iter()
        .rev()
        .find(|(k, v)| k == key && !v.trim().is_empty())
        .map(|(_, v)| v.trim())
}

/// The CPUs irqbalance bans given its variables: `(cpus, how)` (`how` the assignment in
/// force, `IRQBALANCE_BANNED_CPUS=...` or `IRQBALANCE_BANNED_CPULIST=...`); `None` for the
/// automatic ban.
pub fn banned_by_vars(vars: &[(String, String)]) -> Option<(CpuSet, String)> {
    if let Some(mask) = var(vars, MASK_VAR) {
        let cpus = CpuSet::parse_mask(mask).unwrap_or_default();
        return Some((cpus, format!("{MASK_VAR}={mask}")));
    }
    let list = var(vars, LIST_VAR)?;
    let cpus = CpuSet::parse_list(list).unwrap_or_default();
    Some((cpus, format!("{LIST_VAR}={list}")))
}

fn irqbalance(ctx: &Ctx) -> Outcome {
    let tasks = match task_list(ctx) {
        Ok(t) => t,
        Err(o) => return o,
    };
    let Some(daemon) = tasks
        .iter()
        .find(|t| t.pid == t.tid && t.comm == "irqbalance" && !t.is_dead())
    else {
        return Outcome::pass("irqbalance is not running");
    };
    let s = match split(ctx) {
        Ok(s) => s,
        Err(o) => return o,
    };
    let pid = daemon.pid;
    let root = ctx.root();
    let mut evidence: Vec<(String, String)> = Vec::new();
    if let Ok(args) = sys::tasks::process_cmdline(root, pid)
        && !args.is_empty()
    {
        evidence.push((format!("/proc/{pid}/cmdline"), args.join(" ")));
    }
    let (banned, how) = banned_cpus(ctx, pid, &mut evidence);
    let left = s.rt.difference(&banned);
    let with_evidence = |mut o: Outcome| {
        for (src, v) in &evidence {
            o = o.evidence(src.clone(), v.clone());
        }
        o
    };
    if left.is_empty() {
        return with_evidence(Outcome::pass(format!(
            "irqbalance (pid {pid}) runs and leaves RT {} alone ({how})",
            cpus_word(&s.rt)
        )));
    }
    let config = CONFIG_FILES
        .iter()
        .find(|p| root.exists(p))
        .unwrap_or(&CONFIG_FILES[0]);
    with_evidence(Outcome::problem(format!(
        "irqbalance (pid {pid}) runs and may move IRQs onto RT {} (it bans {}: {how})",
        cpus_word(&left),
        if banned.is_empty() {
            "no CPU".to_string()
        } else {
            cpus_word(&banned)
        }
    )))
    .with_fixes(irqbalance_fixes(root, config, &s.rt, pid))
}

/// Stopping irqbalance, or banning `rt` in `config` and restarting it: with `systemctl` where
/// systemd is PID 1, else in words (the init system's own command, or by hand).
fn irqbalance_fixes(root: &sys::Root, config: &str, rt: &CpuSet, pid: u32) -> Vec<Fix> {
    let ban = format!("echo {LIST_VAR}={rt} >> {config}");
    if sys::service::systemd_is_init(root) {
        return vec![
            Fix::Command {
                command: "systemctl disable --now irqbalance".into(),
            },
            Fix::Command {
                command: format!("{ban} && systemctl restart irqbalance"),
            },
            Fix::Advice {
                text: "disable it when IRQs are placed by hand; ban the RT CPUs to keep it \
                       balancing the housekeeping CPUs"
                    .into(),
            },
        ];
    }
    vec![
        Fix::Command {
            command: format!("kill {pid}"),
        },
        Fix::Advice {
            text: format!(
                "systemd is not the init system here: stop irqbalance with the init system's \
                 own command (and keep it from starting at boot) when IRQs are placed by hand; \
                 or ban the RT CPUs (`{ban}`, or `{LIST_VAR}={rt}` in the environment it is \
                 started with) and restart it, to keep it balancing the housekeeping CPUs"
            ),
        },
    ]
}

/// The CPUs the running irqbalance (`pid`) bans and how, in words. The daemon's own
/// environment is what it acts on; the config files are the fallback when it cannot be
/// read, and the automatic ban when neither sets a variable. What was read goes to
/// `evidence`.
fn banned_cpus(ctx: &Ctx, pid: u32, evidence: &mut Vec<(String, String)>) -> (CpuSet, String) {
    let root = ctx.root();
    match sys::tasks::process_environ(root, pid) {
        Ok(vars) => {
            let shown: Vec<String> = vars
                .iter()
                .filter(|(k, _)| k.starts_with("IRQBALANCE_"))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            evidence.push((
                format!("/proc/{pid}/environ"),
                if shown.is_empty() {
                    "no IRQBALANCE_* variable".to_string()
                } else {
                    shown.join(" ")
                },
            ));
            match banned_by_vars(&vars) {
                Some(b) => b,
                None => automatic(ctx, evidence),
            }
        }
        Err(e) => {
            evidence.push((format!("/proc/{pid}/environ"), format!("unreadable: {e}")));
            let from_file = CONFIG_FILES.iter().find_map(|path| {
                let text = root.read_opt(path).ok()??;
                let vars = env_file(&text);
                let (cpus, how) = banned_by_vars(&vars)?;
                Some((cpus, format!("{how} in {path}")))
            });
            match from_file {
                Some(b) => b,
                None => automatic(ctx, evidence),
            }
        }
    }
}

/// The automatic ban (isolated plus nohz_full CPUs), noting where it came from.
fn automatic(ctx: &Ctx, evidence: &mut Vec<(String, String)>) -> (CpuSet, String) {
    let host = ctx.host();
    let cpus = host.isolated_cpus.union(&host.nohz_full_cpus);
    evidence.push((
        "/sys/devices/system/cpu/isolated + nohz_full".to_string(),
        if cpus.is_empty() {
            "(empty)".to_string()
        } else {
            cpus.to_string()
        },
    ));
    (
        cpus,
        "no ban configured; irqbalance bans the isolated and nohz_full CPUs by itself".to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::super::trees::{FIFO, OTHER, Tree, USER, tuned, tuned_ctx, untuned, untuned_ctx};
    use super::*;
    use crate::context::Options;
    use model::audit::{Finding, Fix, Status};
    use testkit::FakeRoot;

    fn finding(ctx: &Ctx) -> Finding {
        IRQBALANCE.finding((IRQBALANCE.run)(ctx))
    }

    #[test]
    fn tuned_board_passes() {
        let fake = tuned();
        let f = finding(&tuned_ctx(&fake));
        assert_eq!(f.status, Status::Pass, "{f:?}");
        assert_eq!(
            f.summary,
            "irqbalance (pid 900) runs and leaves RT CPUs 2-7 alone (IRQBALANCE_BANNED_CPULIST=2-7)"
        );
        assert!(
            f.evidence.iter().any(|e| e.source == "/proc/900/cmdline"
                && e.value == "/usr/sbin/irqbalance --foreground")
        );
    }

    #[test]
    fn untuned_box_fails() {
        let fake = untuned();
        let f = finding(&untuned_ctx(&fake));
        assert_eq!(f.status, Status::Fail, "{f:?}");
        assert!(
            f.summary.starts_with(
                "irqbalance (pid 900) runs and may move IRQs onto RT CPUs 2-7 (it bans no CPU"
            ),
            "{}",
            f.summary
        );
        assert_eq!(
            f.fix[..2],
            [
                Fix::Command {
                    command: "systemctl disable --now irqbalance".into()
                },
                Fix::Command {
                    command: "echo IRQBALANCE_BANNED_CPULIST=2-7 >> /etc/default/irqbalance && systemctl restart irqbalance".into()
                }
            ]
        );
    }

    fn daemon(env: Option<&str>) -> Tree {
        let tree = Tree(FakeRoot::new().cpus(4).cmdline("quiet"))
            .proc(1, "systemd", USER, (OTHER, 0), "0-3")
            .proc(77, "irqbalance", USER, (OTHER, 0), "0-3");
        match env {
            Some(e) => tree.file("/proc/77/environ", e),
            None => tree,
        }
    }

    fn rt(fake: &FakeRoot, list: &str) -> Ctx {
        Ctx::new(
            fake.root(),
            Options {
                rt_cpus: Some(CpuSet::parse_list(list).unwrap()),
                ..Options::default()
            },
        )
    }

    #[test]
    fn the_mask_wins_over_the_list_and_the_automatic_ban() {
        let fake = daemon(Some(
            "IRQBALANCE_BANNED_CPUS=c\0IRQBALANCE_BANNED_CPULIST=1\0",
        ))
        .0;
        let f = finding(&rt(&fake, "2-3"));
        assert_eq!(f.status, Status::Pass, "{f:?}");
        assert!(
            f.summary.contains("IRQBALANCE_BANNED_CPUS=c"),
            "{}",
            f.summary
        );
        let fake = daemon(Some(
            "IRQBALANCE_BANNED_CPUS=\0IRQBALANCE_BANNED_CPULIST=3\0",
        ))
        .0;
        let f = finding(&rt(&fake, "2-3"));
        assert_eq!(f.status, Status::Fail);
        assert!(
            f.summary.contains("onto RT CPU 2 (it bans CPU 3"),
            "{}",
            f.summary
        );
        // Nothing configured: the isolated and nohz_full CPUs are banned automatically.
        let fake = daemon(Some("LANG=C\0")).0.isolated("2").nohz_full("3");
        let f = finding(&rt(&fake, "2-3"));
        assert_eq!(f.status, Status::Pass, "{f:?}");
        assert!(f.summary.contains("by itself"), "{}", f.summary);
    }

    #[test]
    fn an_unreadable_environment_falls_back_to_the_config_file() {
        let fake = daemon(None)
            .file(
                "/etc/sysconfig/irqbalance",
                "# comment\nexport IRQBALANCE_BANNED_CPULIST=\"2-3\"\n",
            )
            .0;
        let f = finding(&rt(&fake, "2-3"));
        assert_eq!(f.status, Status::Pass, "{f:?}");
        assert!(
            f.summary.contains("in /etc/sysconfig/irqbalance"),
            "{}",
            f.summary
        );
        assert!(f.evidence.iter().any(|e| e.value.starts_with("unreadable")));
    }

    #[test]
    fn no_daemon_passes_and_no_rt_cpus_is_unknown() {
        let fake = Tree(FakeRoot::new().cpus(2))
            .proc(1, "systemd", USER, (OTHER, 0), "0-1")
            .proc(5, "irqbalance-ui", USER, (FIFO, 1), "0-1")
            .0;
        let f = finding(&rt(&fake, "1"));
        assert_eq!(
            (f.status, f.summary.as_str()),
            (Status::Pass, "irqbalance is not running")
        );
        let fake = daemon(Some("")).0;
        let f = finding(&Ctx::new(fake.root(), Options::default()));
        assert_eq!(f.status, Status::Unknown);
        let fake = FakeRoot::new().cpus(2);
        let f = finding(&rt(&fake, "1"));
        assert_eq!(f.status, Status::Unknown);
    }

    #[test]
    fn environment_files() {
        let vars = env_file(
            "# x\n\nIRQBALANCE_ARGS=\"--banirq=5\"\n export A='b c'\nbad line\n=x\nK-1=2\nIRQBALANCE_ONESHOT=\n",
        );
        assert_eq!(
            vars,
            [
                ("IRQBALANCE_ARGS".to_string(), "--banirq=5".to_string()),
                ("A".to_string(), "b c".to_string()),
                ("IRQBALANCE_ONESHOT".to_string(), String::new()),
            ]
        );
        assert_eq!(var(&vars, "IRQBALANCE_ONESHOT"), None);
        assert!(banned_by_vars(&vars).is_none());
    }
}
