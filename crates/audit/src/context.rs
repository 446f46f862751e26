//! [`Ctx`]: what every check reads from, each input fetched once through the [`Root`] and
//! kept for the other checks (kernel config, command line, host description, kernel log, the
//! real-time CPUs), plus a typed memo for inputs only one group of checks shares.

use std::any::{Any, TypeId};
use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

use model::CpuSet;
use model::audit::{Profile, RtCpus};
use model::host::HostInfo;
use sys::Root;
use sys::parse::cmdline::{self, Cmdline};

/// What the audit was asked to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Production or validation kernel.
    pub profile: Profile,
    /// The real-time CPUs, when the user named them (`--rt-cpus`).
    pub rt_cpus: Option<CpuSet>,
    /// A kernel config to judge instead of the running kernel's (`--kconfig`), read by
    /// [`Source::kconfig_file`] before the audit starts.
    pub kconfig: Option<Source>,
    /// A saved kernel log to judge instead of `/dev/kmsg` (`--dmesg`), read by
    /// [`Source::kernel_log_file`] before the audit starts.
    pub dmesg: Option<Source>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            profile: Profile::Production,
            rt_cpus: None,
            kconfig: None,
            dmesg: None,
        }
    }
}

/// A text input and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The text.
    pub text: String,
    /// The file it was read from (a kernel path, or a local file given on the command line).
    pub path: String,
}

impl Source {
    /// Reads a kernel config a person named (`--kconfig`): text or gzip, bounded, and holding
    /// at least one `CONFIG_` option. The error is one line, without the path.
    pub fn kconfig_file(path: &Path) -> Result<Source, String> {
        Ok(Source {
            text: sys::host::read_config_file(path)?,
            path: path.display().to_string(),
        })
    }

    /// Reads a saved kernel log a person named (`--dmesg`; a pipe such as `<(dmesg)` works):
    /// bounded, and refused when it is empty or binary, since an unread log would pass every
    /// log check. Bytes that are not UTF-8 are replaced, as `/dev/kmsg` text may hold them.
    /// The error is one line, without the path.
    pub fn kernel_log_file(path: &Path) -> Result<Source, String> {
        let bytes = files::read_input(path, model::limits::MAX_KERNEL_LOG_BYTES)?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err("it is empty: a saved kernel log holds the kernel's messages (`dmesg > FILE`, `journalctl -k > FILE`)".to_string());
        }
        if bytes.contains(&0) {
            return Err(
                "a binary file, not a kernel log: give the text of `dmesg` or `journalctl -k`"
                    .to_string(),
            );
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let replaced = text
            .chars()
            .filter(|&c| c == char::REPLACEMENT_CHARACTER)
            .count();
        if replaced * 100 > text.chars().count() {
            return Err("not text: more than 1% of it is not UTF-8; give the text of `dmesg` or `journalctl -k`".to_string());
        }
        Ok(Source {
            text,
            path: path.display().to_string(),
        })
    }
}

/// The audit's view of one machine. Inputs are read on first use; a missing input is an
/// `Err` carrying the reason, which the checks turn into status `unknown`.
pub struct Ctx {
    root: Root,
    options: Options,
    host: OnceCell<HostInfo>,
    kconfig: OnceCell<Result<Source, String>>,
    kernel_log: OnceCell<Result<Source, String>>,
    rt: OnceCell<RtCpus>,
    memo: RefCell<HashMap<TypeId, Rc<dyn Any>>>,
}

impl Ctx {
    /// A context over `root`.
    pub fn new(root: Root, options: Options) -> Ctx {
        Ctx {
            root,
            options,
            host: OnceCell::new(),
            kconfig: OnceCell::new(),
            kernel_log: OnceCell::new(),
            rt: OnceCell::new(),
            memo: RefCell::new(HashMap::new()),
        }
    }

    /// Where kernel files are read.
    pub fn root(&self) -> &Root {
        &self.root
    }

    /// The options.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The profile.
    pub fn profile(&self) -> Profile {
        self.options.profile
    }

    /// The host description (kernel, preemption model, command line, CPU sets, topology).
    pub fn host(&self) -> &HostInfo {
        self.host.get_or_init(|| sys::host::host_info(&self.root))
    }

    /// The boot command line as read (empty when unreadable).
    pub fn cmdline_text(&self) -> &str {
        &self.host().cmdline
    }

    /// The boot command line, split into parameters.
    pub fn cmdline(&self) -> Cmdline<'_> {
        cmdline::parse(self.cmdline_text())
    }

    /// Whether `/proc/cmdline` could be read at all.
    pub fn has_cmdline(&self) -> bool {
        self.root.exists("/proc/cmdline")
    }

    /// The online CPUs.
    pub fn online(&self) -> &CpuSet {
        &self.host().online_cpus
    }

    /// The kernel configuration: `--kconfig FILE`, `/proc/config.gz` or
    /// `/boot/config-<release>`.
    pub fn kconfig(&self) -> Result<&Source, &str> {
        self.kconfig
            .get_or_init(|| {
                if let Some(given) = &self.options.kconfig {
                    return Ok(given.clone());
                }
                sys::host::kernel_config_with_source(&self.root)
                    .map(|(text, path)| Source { text, path })
                    .ok_or_else(|| {
                        format!(
                            "no kernel config: /proc/config.gz is absent (CONFIG_IKCONFIG_PROC) and /boot/config-{} cannot be read; give one with --kconfig FILE",
                            self.host().kernel_release
                        )
                    })
            })
            .as_ref()
            .map_err(String::as_str)
    }

    /// The kernel log: `--dmesg FILE`, else `/dev/kmsg`.
    pub fn kernel_log(&self) -> Result<&Source, &str> {
        self.kernel_log
            .get_or_init(|| {
                if let Some(given) = &self.options.dmesg {
                    return Ok(given.clone());
                }
                sys::kmsg::read_all(&self.root)
                    .map(|text| Source {
                        text,
                        path: sys::kmsg::KMSG.to_string(),
                    })
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(String::as_str)
    }

    /// The real-time CPUs: `--rt-cpus`, else `isolcpus=`, else `nohz_full=`, else the CPUs of
    /// cgroup v2 cpuset partitions; empty with source `none` when nothing sets CPUs apart.
    pub fn rt(&self) -> &RtCpus {
        self.rt.get_or_init(|| infer_rt_cpus(self))
    }

    /// The real-time CPUs, or the `unknown` outcome a placement check returns when no CPU is
    /// set apart (the `cpu.isolation` check reports the absence itself).
    pub fn rt_cpus_or_unknown(&self) -> Result<&CpuSet, crate::outcome::Outcome> {
        let rt = self.rt();
        if rt.cpus.is_empty() {
            Err(crate::outcome::Outcome::unknown(
                "no real-time CPUs are set apart (no isolcpus=, nohz_full= or cpuset partition); name them with --rt-cpus LIST",
            ))
        } else {
            Ok(&rt.cpus)
        }
    }

    /// A value computed once per audit and shared by the checks that need it (the IRQ table,
    /// the task list). `T` identifies the value.
    pub fn memo<T: 'static>(&self, compute: impl FnOnce(&Ctx) -> T) -> Rc<T> {
        let key = TypeId::of::<T>();
        if let Some(v) = self.memo.borrow().get(&key) {
            return Rc::clone(v).downcast::<T>().expect("memo keyed by type");
        }
        let value: Rc<T> = Rc::new(compute(self));
        self.memo
            .borrow_mut()
            .insert(key, Rc::clone(&value) as Rc<dyn Any>);
        value
    }
}

fn infer_rt_cpus(ctx: &Ctx) -> RtCpus {
    let rt = |cpus: CpuSet, source: &str| RtCpus {
        cpus,
        source: source.to_string(),
    };
    if let Some(cpus) = &ctx.options.rt_cpus {
        return rt(cpus.clone(), "--rt-cpus");
    }
    let cmdline = ctx.cmdline();
    if let Some(value) = cmdline.value("isolcpus")
        && let Some(cpus) = isolcpus_cpus(value, &ctx.host().possible_cpus)
        && !cpus.is_empty()
    {
        return rt(cpus, "isolcpus");
    }
    if let Some(value) = cmdline.value("nohz_full")
        && let Ok(cpus) = kernel_cpu_list(value, &ctx.host().possible_cpus)
        && !cpus.is_empty()
    {
        return rt(cpus, "nohz_full");
    }
    // Valid v2 partitions, and v1 exclusive cpusets without load balancing above them (what
    // `rtlab tune apply` makes on cgroup v1): not when they take every CPU (then they set
    // nothing apart from a rest).
    let cpus = sys::partition::cpuset_isolated_cpus(ctx.root());
    if !cpus.is_empty() && cpus != ctx.host().online_cpus {
        return rt(cpus, "cpuset partition");
    }
    rt(CpuSet::new(), "none")
}

/// The CPU list of an `isolcpus=` value, after its flags (`isolcpus=nohz,domain,2-N`), read
/// with the kernel's list syntax against the `possible` CPUs.
pub fn isolcpus_cpus(value: &str, possible: &CpuSet) -> Option<CpuSet> {
    let list = isolcpus_split(value).1;
    kernel_cpu_list(list, possible).ok()
}

/// A CPU list as the kernel reads it: `all`, `N` (the last possible CPU) and the plain
/// syntax of [`CpuSet::parse_list`].
pub fn kernel_cpu_list(value: &str, possible: &CpuSet) -> Result<CpuSet, String> {
    let value = value.trim();
    if value == "all" {
        return Ok(possible.clone());
    }
    let last = possible.last().map(|c| c.to_string());
    let text = if value.contains('N') {
        let Some(last) = &last else {
            return Err(format!("'{value}' uses N but the CPU count is unknown"));
        };
        value
            .split(',')
            .map(|part| {
                let (range, stride) = match part.split_once(':') {
                    Some((r, s)) => (r, Some(s)),
                    None => (part, None),
                };
                let range = range
                    .split('-')
                    .map(|end| {
                        if end.trim() == "N" {
                            last.as_str()
                        } else {
                            end
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("-");
                match stride {
                    Some(s) => format!("{range}:{s}"),
                    None => range,
                }
            })
            .collect::<Vec<_>>()
            .join(",")
    } else {
        value.to_string()
    };
    if text.is_empty() {
        return Err("an empty CPU list".to_string());
    }
    CpuSet::parse_list(&text).map_err(|e| e.to_string())
}

/// Splits an `isolcpus=` value into its flags and its CPU list. The kernel takes leading
/// words made of letters and `_` as flags (`nohz`, `domain`, `managed_irq`).
pub fn isolcpus_split(value: &str) -> (Vec<&str>, &str) {
    let mut flags = Vec::new();
    let mut rest = value;
    while let Some((word, tail)) = rest.split_once(',') {
        if !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_') {
            flags.push(word);
            rest = tail;
        } else {
            break;
        }
    }
    (flags, rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use testkit::FakeRoot;

    #[test]
    fn isolcpus_flags_and_list_split() {
        assert_eq!(isolcpus_split("2-7"), (vec![], "2-7"));
        assert_eq!(
            isolcpus_split("nohz,domain,managed_irq,2-3,6"),
            (vec!["nohz", "domain", "managed_irq"], "2-3,6")
        );
        let possible = CpuSet::parse_list("0-7").unwrap();
        assert_eq!(
            isolcpus_cpus("managed_irq,3", &possible),
            Some(CpuSet::from_cpus([3]))
        );
        assert_eq!(
            isolcpus_cpus("domain,2-N", &possible),
            Some(CpuSet::parse_list("2-7").unwrap())
        );
        assert_eq!(isolcpus_cpus("x-y", &possible), None);
    }

    #[test]
    fn rt_cpus_come_from_the_most_explicit_source() {
        let fake = FakeRoot::new()
            .cpus(8)
            .cmdline("isolcpus=domain,managed_irq,2-7 nohz_full=4-7");
        let ctx = Ctx::new(fake.root(), Options::default());
        assert_eq!(ctx.rt().source, "isolcpus");
        assert_eq!(ctx.rt().cpus, CpuSet::parse_list("2-7").unwrap());

        let ctx = Ctx::new(
            fake.root(),
            Options {
                rt_cpus: Some(CpuSet::from_cpus([5])),
                ..Options::default()
            },
        );
        assert_eq!(ctx.rt().source, "--rt-cpus");

        let fake = FakeRoot::new().cpus(4).cmdline("quiet nohz_full=3");
        let ctx = Ctx::new(fake.root(), Options::default());
        assert_eq!(ctx.rt().source, "nohz_full");

        let fake = FakeRoot::new().cpus(4).cmdline("quiet");
        let ctx = Ctx::new(fake.root(), Options::default());
        assert_eq!(ctx.rt().source, "none");
        assert!(ctx.rt().cpus.is_empty());

        // A v1 exclusive cpuset under a root that stopped balancing (what `tune apply` makes
        // on cgroup v1) sets its CPUs apart; exclusive cpusets that take every CPU do not.
        let v1 = "/sys/fs/cgroup/cpuset";
        let tuned = |hk_exclusive: &str| {
            FakeRoot::new()
                .cpus(4)
                .cmdline("quiet")
                .file(&format!("{v1}/cpuset.sched_load_balance"), "0\n")
                .file(&format!("{v1}/rtlab-rt/cpuset.cpu_exclusive"), "1\n")
                .file(&format!("{v1}/rtlab-rt/cpuset.cpus"), "2-3\n")
                .file(
                    &format!("{v1}/rtlab-housekeeping/cpuset.cpu_exclusive"),
                    &format!("{hk_exclusive}\n"),
                )
                .file(&format!("{v1}/rtlab-housekeeping/cpuset.cpus"), "0-1\n")
        };
        let fake = tuned("0");
        let ctx = Ctx::new(fake.root(), Options::default());
        assert_eq!(ctx.rt().source, "cpuset partition");
        assert_eq!(ctx.rt().cpus, CpuSet::parse_list("2-3").unwrap());
        // `cset shield`'s layout: both sets exclusive, together every CPU.
        let fake = tuned("1");
        let ctx = Ctx::new(fake.root(), Options::default());
        assert_eq!(ctx.rt().source, "none");
    }

    #[test]
    fn memo_computes_once_per_type() {
        let fake = FakeRoot::new().cpus(1);
        let ctx = Ctx::new(fake.root(), Options::default());
        let mut calls = 0;
        let a = ctx.memo(|_| {
            calls += 1;
            7u32
        });
        let b = ctx.memo(|_| 8u32);
        assert_eq!((*a, *b, calls), (7, 7, 1));
    }

    #[test]
    fn missing_inputs_give_reasons() {
        let fake = FakeRoot::new().cpus(1).kernel("6.1.0", "#1 SMP");
        let ctx = Ctx::new(fake.root(), Options::default());
        let err = ctx.kconfig().unwrap_err();
        assert!(
            err.contains("/boot/config-6.1.0") && err.contains("--kconfig"),
            "{err}"
        );
        assert!(ctx.kernel_log().unwrap_err().contains("dev/kmsg"));
    }
}
