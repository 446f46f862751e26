//! Fuzz target `sys_thread`: arbitrary UTF-8 text through the parsers of a thread's files that
//! `rtlab inspect` samples (`sys::parse::thread`): `stat` counters, `schedstat`, `sched`
//! migrations, `status` values, and `syscall` with its futex classification on every
//! numbering. The whole text goes to each, and each of its lines to the one-line parsers.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sys::parse::thread::{
    SyscallAbi, futex_wait, nr_migrations, schedstat, stat_counters, status_kb, status_number,
    syscall,
};

fuzz_target!(|data: &[u8]| {
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    let _ = nr_migrations(text);
    for key in ["VmLck", "VmRSS", "Tgid", "voluntary_ctxt_switches"] {
        let _ = status_kb(text, key);
        let _ = status_number(text, key);
    }
    for line in std::iter::once(text).chain(text.lines().take(64)) {
        let _ = stat_counters(line);
        if let Some(s) = schedstat(line) {
            let _ = s.run_delay_ns.checked_add(s.cpu_ns);
        }
        if let Some(call) = syscall(line) {
            for abi in [SyscallAbi::X86_64, SyscallAbi::Generic, SyscallAbi::Legacy32] {
                if let Some(w) = futex_wait(abi, &call) {
                    assert!(w.op.contains("FUTEX") || w.op.starts_with("futex_"), "{}", w.op);
                }
            }
        }
    }
});
