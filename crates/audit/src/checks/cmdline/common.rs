//! What the `cmdline.*` checks share: where the command line is read, what a parameter
//! holds (a CPU list, bare, bad or absent), and the words for what was seen. Below every
//! `cmdline` check, so none depends on the group's catalogue.

use model::CpuSet;

use crate::context::Ctx;
use crate::outcome::Outcome;

/// Where the boot command line is read.
pub(super) const CMDLINE: &str = "/proc/cmdline";

/// The `unknown` outcome when `/proc/cmdline` cannot be read.
pub(super) fn unreadable(ctx: &Ctx) -> Option<Outcome> {
    (!ctx.has_cmdline()).then(|| {
        Outcome::unknown(format!(
            "{CMDLINE} cannot be read (procfs not mounted, or not captured)"
        ))
    })
}

/// The parameters named `keys` as written (`isolcpus=2-7 nohz_full=2-7`), or what the
/// command line holds instead.
pub(super) fn seen(ctx: &Ctx, keys: &[&str]) -> String {
    let cmdline = ctx.cmdline();
    let present: Vec<String> = keys
        .iter()
        .filter_map(|k| cmdline.get(k))
        .map(|p| match p.value {
            Some(v) => format!("{}={v}", p.key),
            None => p.key.to_string(),
        })
        .collect();
    if present.is_empty() {
        format!(
            "none of {} in: {}",
            keys.join(", "),
            shorten(ctx.cmdline_text(), 160)
        )
    } else {
        present.join(" ")
    }
}

/// `text` cut to `max` characters.
pub(super) fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

/// A boot parameter that takes a CPU list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum CpuParam {
    /// Not on the command line.
    Absent,
    /// Given without `=` (`rcu_nocbs`).
    Bare,
    /// A list the kernel accepts.
    List(CpuSet),
    /// Not a CPU list: the kernel ignores it.
    Bad(String),
}

impl CpuParam {
    /// The CPUs it names (none unless a valid list).
    pub(super) fn cpus(&self) -> CpuSet {
        match self {
            CpuParam::List(cpus) => cpus.clone(),
            _ => CpuSet::new(),
        }
    }
}

/// Reads CPU-list parameter `key` the way the kernel's `cpulist_parse()` does, with `all`
/// for every possible CPU and `N` for the last one (kernels since 5.13).
pub(super) fn cpu_param(ctx: &Ctx, key: &str) -> CpuParam {
    match ctx.cmdline().get(key) {
        None => CpuParam::Absent,
        Some(p) => match p.value {
            None => CpuParam::Bare,
            Some(v) => match kernel_cpu_list(v, &possible(ctx)) {
                Ok(cpus) => CpuParam::List(cpus),
                Err(e) => CpuParam::Bad(e),
            },
        },
    }
}

/// The possible CPUs (else the online ones).
pub(super) fn possible(ctx: &Ctx) -> CpuSet {
    let host = ctx.host();
    if host.possible_cpus.is_empty() {
        host.online_cpus.clone()
    } else {
        host.possible_cpus.clone()
    }
}

pub(crate) use crate::context::kernel_cpu_list;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Options;
    use testkit::FakeRoot;

    #[test]
    fn kernel_cpu_lists_take_all_and_n() {
        let possible = CpuSet::parse_list("0-7").unwrap();
        let list = |v: &str| kernel_cpu_list(v, &possible).map(|c| c.to_string());
        assert_eq!(list("all").unwrap(), "0-7");
        assert_eq!(list("2-N").unwrap(), "2-7");
        assert_eq!(list("1,N").unwrap(), "1,7");
        assert_eq!(list("0-N:1/2").unwrap(), "0,2,4,6");
        assert_eq!(list("2-7").unwrap(), "2-7");
        assert!(list("x").is_err());
        assert!(list("").is_err());
        assert!(list("7-2").is_err());
        assert!(kernel_cpu_list("N", &CpuSet::new()).is_err());
    }

    #[test]
    fn cpu_params_and_what_was_seen() {
        let fake = FakeRoot::new()
            .cpus(4)
            .cmdline("quiet rcu_nocbs isolcpus=1-3 nohz_full=x irqaffinity=all");
        let ctx = Ctx::new(fake.root(), Options::default());
        assert_eq!(cpu_param(&ctx, "rcu_nocbs"), CpuParam::Bare);
        assert_eq!(
            cpu_param(&ctx, "isolcpus"),
            CpuParam::List(CpuSet::parse_list("1-3").unwrap())
        );
        assert!(matches!(cpu_param(&ctx, "nohz_full"), CpuParam::Bad(_)));
        assert_eq!(cpu_param(&ctx, "irqaffinity").cpus().to_string(), "0-3");
        assert_eq!(cpu_param(&ctx, "rcu_nocb_poll"), CpuParam::Absent);
        assert_eq!(
            seen(&ctx, &["rcu_nocbs", "isolcpus"]),
            "rcu_nocbs isolcpus=1-3"
        );
        assert_eq!(
            seen(&ctx, &["skew_tick"]),
            "none of skew_tick in: quiet rcu_nocbs isolcpus=1-3 nohz_full=x irqaffinity=all"
        );
        assert!(unreadable(&ctx).is_none());
        let fake = FakeRoot::new().cpus(1);
        let ctx = Ctx::new(fake.root(), Options::default());
        assert!(unreadable(&ctx).is_some());
    }
}
