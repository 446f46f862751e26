//! What `tune`, `tune irqd` and `run --tuned` share: the tune room's request made from the
//! CPU split options (CPU lists resolved on this machine, IRQ rules read), and the plan.

use anyhow::Result;
use model::tune::{IrqRule, TuneProfile};
use model::{CpuSet, CpuSpec};
use sys::Root;

use crate::exit::UsageError;
use crate::flags::{ProfileArg, SplitArgs};

/// The plan for `split` on `root`; a split rtlab refuses is a usage error (exit 2).
pub fn make_plan(split: &SplitArgs, root: &Root) -> Result<model::tune::TunePlan> {
    let request = make_request(split, root)?;
    Ok(tune::plan(root, &request).map_err(|e| UsageError(e.to_string()))?)
}

/// The tune room's request for `split`: CPU lists resolved, rules read.
pub fn make_request(split: &SplitArgs, root: &Root) -> Result<tune::Request> {
    Ok(tune::Request {
        rt_cpus: resolve(&split.rt_cpus, "--rt-cpus", root)?,
        housekeeping: split
            .housekeeping
            .as_ref()
            .map(|h| resolve(h, "--housekeeping", root))
            .transpose()?,
        profile: match split.profile {
            ProfileArg::Balanced => TuneProfile::Balanced,
            ProfileArg::Strict => TuneProfile::Strict,
        },
        rules: rules(split)?,
        siblings: split.sibling_cpusets.into(),
    })
}

/// Every rule of `split`: those given with --irq-rule, then the --irq-rules-file ones.
pub fn rules(split: &SplitArgs) -> Result<Vec<IrqRule>> {
    let mut rules = split.irq_rules.clone();
    if let Some(path) = &split.irq_rules_file {
        let text = files::read_input_text(path, model::limits::MAX_RULES_BYTES)
            .map_err(|e| UsageError(format!("--irq-rules-file {}: {e}", path.display())))?;
        let more = model::irq_rule::parse_rules(&text)
            .map_err(|e| UsageError(format!("--irq-rules-file {}: {e}", path.display())))?;
        rules.extend(more);
    }
    Ok(rules)
}

/// A CPU selector resolved on this machine, named by its flag when it does not fit.
fn resolve(spec: &CpuSpec, flag: &str, root: &Root) -> Result<CpuSet> {
    let possible = sys::cpu::possible(root)?;
    let online = sys::cpu::online(root)?;
    spec.resolve(&possible, &online, &online)
        .map_err(|e| UsageError(format!("{flag} {spec}: {e}")).into())
}
