//! The irqbalance part of a plan (the Linaro 2023 talk: "irqbalance told"). A running irqbalance rewrites
//! IRQ affinities every ten seconds and would undo the IRQ moves; it must ban the RT CPUs.
//! It reads its banned CPUs once, at start, from its environment — `IRQBALANCE_BANNED_CPUS`
//! (a hex mask, which wins) or `IRQBALANCE_BANNED_CPULIST` — which systemd fills from
//! `/etc/default/irqbalance` (Debian) or `/etc/sysconfig/irqbalance` (RHEL). So the plan sets
//! the variable in that file, keeping CPUs already banned, and restarts the service; revert
//! puts the file back byte for byte and restarts it again.

use model::tune::{Action, Change};
use sys::irq::to_mask;

use super::Planner;

const CONFIG_FILES: [&str; 2] = ["/etc/default/irqbalance", "/etc/sysconfig/irqbalance"];
const MASK_VAR: &str = "IRQBALANCE_BANNED_CPUS";
const LIST_VAR: &str = "IRQBALANCE_BANNED_CPULIST";
/// The unit Debian and RHEL ship.
pub(crate) const SERVICE: &str = "irqbalance.service";

impl Planner<'_> {
    pub(super) fn irqbalance(&mut self) {
        let Ok(tasks) = sys::tasks::all_threads(self.root) else {
            return;
        };
        let Some(daemon) = tasks
            .iter()
            .find(|t| t.pid == t.tid && t.comm == "irqbalance" && !t.is_dead())
        else {
            return;
        };
        let pid = daemon.pid;
        let env = sys::tasks::process_environ(self.root, pid).unwrap_or_default();
        // What it bans now, as the audit reads it; without a variable it bans the isolated and
        // nohz_full CPUs by itself, which a variable set now would replace, so they are kept.
        let (var, banned) = match audit::irqbalance_banned(&env) {
            Some((cpus, how)) if how.starts_with(&format!("{MASK_VAR}=")) => (MASK_VAR, cpus),
            Some((cpus, _)) => (LIST_VAR, cpus),
            None => (
                LIST_VAR,
                sys::cpu::isolated(self.root)
                    .unwrap_or_default()
                    .union(&sys::cpu::nohz_full(self.root).unwrap_or_default()),
            ),
        };
        if self.rt.difference(&banned).is_empty() {
            return;
        }
        let want = banned.union(self.rt);
        let new = if var == MASK_VAR {
            format!("{var}={}", to_mask(&want))
        } else {
            format!("{var}={want}")
        };
        // systemd sets INVOCATION_ID in a service's environment; it can restart the service
        // only while it is the init system (not in a container whose PID 1 is another).
        let by_systemd = env.iter().any(|(k, _)| k == "INVOCATION_ID")
            && sys::service::systemd_is_init(self.root);
        let Some(file) = CONFIG_FILES.iter().find(|f| self.root.exists(f)) else {
            self.notes.push(format!(
                "irqbalance (pid {pid}) may move IRQs back onto RT {}: no {} to set \
                 {new} in; ban them where it is started, or stop it{}",
                self.rt.difference(&banned).with_noun(),
                CONFIG_FILES.join(" or "),
                if sys::service::systemd_is_init(self.root) {
                    " (`systemctl disable --now irqbalance`)"
                } else {
                    " with the init system's own command"
                }
            ));
            return;
        };
        let current = self
            .root
            .read_opt(file)
            .ok()
            .flatten()
            .and_then(|text| env_value(&text, var));
        self.changes.push(Change {
            group: "irqbalance".to_string(),
            action: Action::SetEnv,
            path: file.to_string(),
            current,
            new: Some(new),
            reason: format!(
                "irqbalance (pid {pid}) rebalances IRQs every 10 s and would move them back onto \
                 RT {}; it skips the CPUs banned here",
                self.rt.difference(&banned).with_noun()
            ),
        });
        if by_systemd {
            self.changes.push(Change {
                group: "irqbalance".to_string(),
                action: Action::Restart,
                path: SERVICE.to_string(),
                current: None,
                new: None,
                reason: "irqbalance reads its banned CPUs when it starts".to_string(),
            });
        } else {
            self.notes.push(format!(
                "irqbalance (pid {pid}) does not run as a systemd service here: restart it by hand after \
                 `tune apply` and after `tune revert` so it reads {file}"
            ));
        }
    }
}

/// The value of `key` in a shell-style environment file (the last non-empty assignment).
fn env_value(text: &str, key: &str) -> Option<String> {
    audit::irqbalance_env_file(text)
        .into_iter()
        .rev()
        .find(|(k, v)| k == key && !v.trim().is_empty())
        .map(|(_, v)| v.trim().to_string())
}

/// The value if `line` assigns `key` (`KEY=v`, `export KEY="v"`).
fn assignment<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let l = line.trim();
    let l = l.strip_prefix("export ").unwrap_or(l);
    let v = l.strip_prefix(key)?.strip_prefix('=')?.trim();
    Some(
        v.strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(v),
    )
}

/// `text` with `assign` (`KEY=value`) in force: the key's last uncommented line replaced, or
/// the assignment added at the end.
pub(crate) fn set_env(text: &str, assign: &str) -> String {
    let key = assign.split('=').next().unwrap_or_default();
    let mut lines: Vec<&str> = text.lines().collect();
    match lines.iter().rposition(|l| assignment(l, key).is_some()) {
        Some(i) => lines[i] = assign,
        None => lines.push(assign),
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_a_variable_in_an_environment_file() {
        let text =
            "# IRQBALANCE_BANNED_CPULIST=\n#IRQBALANCE_BANNED_CPULIST=\nIRQBALANCE_ARGS=\"\"\n";
        assert_eq!(env_value(text, LIST_VAR), None);
        let set = set_env(text, "IRQBALANCE_BANNED_CPULIST=2-7");
        assert_eq!(
            set,
            "# IRQBALANCE_BANNED_CPULIST=\n#IRQBALANCE_BANNED_CPULIST=\nIRQBALANCE_ARGS=\"\"\nIRQBALANCE_BANNED_CPULIST=2-7\n"
        );
        assert_eq!(env_value(&set, LIST_VAR).as_deref(), Some("2-7"));
        let again = set_env(
            "export IRQBALANCE_BANNED_CPULIST=\"3\"\nX=1",
            "IRQBALANCE_BANNED_CPULIST=1,3",
        );
        assert_eq!(again, "IRQBALANCE_BANNED_CPULIST=1,3\nX=1\n");
        assert_eq!(env_value("IRQBALANCE_BANNED_CPULISTX=1\n", LIST_VAR), None);
    }
}
