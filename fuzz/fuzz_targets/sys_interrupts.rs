//! Fuzz target `sys_interrupts`: arbitrary UTF-8 text as `/proc/interrupts`
//! (`sys::parse::interrupts::parse`), every row's counts asked per CPU and the local timer
//! found, and every row's description split (`sys::parse::irq::parse_description`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sys::parse::{interrupts, irq};

fuzz_target!(|data: &[u8]| {
    // `Root::read` refuses a file that is not UTF-8.
    let Some(text) = rtlab_fuzz::strict(data) else {
        return;
    };
    // A malformed line is refused with its number; the error must name a line of the text.
    let table = match interrupts::parse(text) {
        Ok(table) => table,
        Err(e) => {
            assert!(e.line >= 1 && e.line <= text.lines().count().max(1), "{e}");
            let _ = irq::parse_description(text);
            return;
        }
    };
    for row in &table.rows {
        for &cpu in &table.cpus {
            let _ = table.count(row, cpu);
        }
        let _ = table.row(&row.name);
        let _ = irq::parse_description(&row.description);
    }
    for &cpu in &table.cpus {
        let _ = table.local_timer_count(cpu);
    }
    let _ = table.local_timer();
    let _ = irq::parse_description(text);
});
