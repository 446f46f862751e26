//! Fuzz target `sys_klog`: arbitrary bytes as a kernel log (`/dev/kmsg` records, `dmesg`,
//! `journalctl -k` text), made text as rtlab makes it (lossy UTF-8, as `sys::kmsg::read_all`
//! and `--dmesg` do), split into messages (`sys::parse::klog::parse`), then classified and
//! judged by the audit's `log.*` checks and `time.tsc_stable` (the log given as `--dmesg`).
#![no_main]

use audit::context::Source;
use audit::{Ctx, Options};
use libfuzzer_sys::fuzz_target;
use sys::parse::klog;

fuzz_target!(|data: &[u8]| {
    let text = rtlab_fuzz::lossy(data);
    for line in klog::parse(&text) {
        let _ = (line.timestamp_us, line.level, line.text, line.line_no);
    }

    let options = Options {
        dmesg: Some(Source {
            text: text.into_owned(),
            path: "/dev/kmsg".to_string(),
        }),
        ..Options::default()
    };
    // An empty machine: only the log is there.
    let ctx = Ctx::new(sys::Root::at("/nonexistent/rtlab-fuzz"), options);
    for check in audit::catalogue() {
        if check.id.starts_with("log.") || check.id == "time.tsc_stable" {
            let _ = (check.run)(&ctx);
        }
    }
});
