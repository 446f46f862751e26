//! Fuzz target `sys_kconfig`: arbitrary UTF-8 text as a kernel config (`/proc/config.gz`,
//! `/boot/config-*`, `--kconfig FILE`): every reader in `sys::parse::kconfig`, the preemption
//! model from it (`sys::parse::preempt::from_config`), the audit's config diff
//! (`audit::kconfig_diff::diff`, the input split at its first NUL into the old and the new
//! config) and the audit's `kconfig.*` and `kernel.*` checks judging it as `--kconfig`.
#![no_main]

use audit::context::Source;
use audit::{Ctx, Options};
use libfuzzer_sys::fuzz_target;
use sys::parse::{kconfig, preempt};

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    for (_, value) in kconfig::entries(text) {
        let _ = kconfig::is_enabled(Some(value));
    }
    let _ = kconfig::kconfig_value(text, "CONFIG_HZ");
    let map = kconfig::to_map(text);
    let _ = map.get("CONFIG_PREEMPT_RT");
    let _ = kconfig::kconfig_enabled(text, "CONFIG_PREEMPT_RT");
    let _ = kconfig::header(text);
    let _ = preempt::from_config(text);
    let (old, new) = text.split_once('\0').unwrap_or((text, ""));
    let _ = audit::kconfig_diff::diff(old, new);

    let options = Options {
        kconfig: Some(Source {
            text: text.to_string(),
            path: "config".to_string(),
        }),
        ..Options::default()
    };
    // An empty machine: only the config is there.
    let ctx = Ctx::new(sys::Root::at("/nonexistent/rtlab-fuzz"), options);
    for check in audit::catalogue() {
        if check.id.starts_with("kconfig.") || check.id.starts_with("kernel.") {
            let _ = (check.run)(&ctx);
        }
    }
});
