//! The function tracers' events as text prints them. `function`: trace-cmd's `do_idle <--
//! cpu_startup_entry`, the kernel's `do_idle <-cpu_startup_entry` (its lines have no event
//! name; [`crate::line`] names them `function`), raw `ip=0x... parent_ip=0x...`.
//! `funcgraph_entry` / `funcgraph_exit`: trace-cmd's graph (`|  do_idle() {`, a leaf
//! `1.500 us   |    tick_nohz_idle_enter();`, `1.500 us   |  }`, the depth in the indent of
//! two spaces a level), the kernel's print format (`--> do_idle (2)`, `<-- do_idle (2)
//! (start: 1a2b  end: 1a3c) over: 0`) and raw fields (`func=0x... depth=2`, `calltime=`,
//! `rettime=`).

use super::{Func, Kind, Pairs};

/// Decodes a function tracer's event; `None` when its fields do not read.
pub(super) fn fields<'a>(name: &'a str, f: &'a str) -> Option<Kind<'a>> {
    match name {
        "function" => function(f),
        "funcgraph_entry" => graph_entry(f),
        _ => graph_exit(f),
    }
}

fn function(f: &str) -> Option<Kind<'_>> {
    if f.starts_with("ip=") {
        let p = Pairs::of(f);
        return Some(Kind::Function {
            func: Func::Addr(hex(p.get("ip")?)?),
            parent: p
                .get("parent_ip")
                .and_then(hex)
                .map_or(Func::Name(""), Func::Addr),
        });
    }
    // `func <-- parent` (trace-cmd), `func <-parent` (the kernel), `func` (no parent shown).
    let (func, parent) = match f.split_once(" <-") {
        Some((func, parent)) => (func, parent.trim_start_matches('-')),
        None => (f, ""),
    };
    let func = symbol(func)?;
    Some(Kind::Function {
        func: Func::Name(func),
        parent: Func::Name(symbol(parent).unwrap_or("")),
    })
}

fn graph_entry(f: &str) -> Option<Kind<'_>> {
    if f.starts_with("func=") {
        let p = Pairs::of(f);
        return Some(Kind::GraphEntry {
            func: Func::Addr(hex(p.get("func")?)?),
            depth: p.num("depth")?,
            leaf_ns: None,
        });
    }
    if let Some(rest) = f.strip_prefix("--> ") {
        let (func, depth) = name_depth(rest)?;
        return Some(Kind::GraphEntry {
            func: Func::Name(func),
            depth,
            leaf_ns: None,
        });
    }
    let (duration, depth, call) = graph_columns(f)?;
    if let Some(func) = call.strip_suffix("() {") {
        return Some(Kind::GraphEntry {
            func: Func::Name(symbol(func)?),
            depth,
            leaf_ns: None,
        });
    }
    let func = call.strip_suffix("();")?;
    Some(Kind::GraphEntry {
        func: Func::Name(symbol(func)?),
        depth,
        leaf_ns: Some(duration?),
    })
}

fn graph_exit(f: &str) -> Option<Kind<'_>> {
    if f.starts_with("func=") {
        let p = Pairs::of(f);
        let (call, ret) = (p.num::<u64>("calltime"), p.num::<u64>("rettime"));
        return Some(Kind::GraphExit {
            depth: p.num("depth")?,
            duration_ns: ret.zip(call).and_then(|(r, c)| r.checked_sub(c)),
        });
    }
    if let Some(rest) = f.strip_prefix("<-- ") {
        let (_, depth) = name_depth(rest)?;
        // `(start: 1a2b  end: 1a3c)`: the call and return times, hex ns.
        let start = rest.split_once("start: ").and_then(|(_, s)| hex(word(s)));
        let end = rest.split_once("end: ").and_then(|(_, s)| hex(word(s)));
        return Some(Kind::GraphExit {
            depth,
            duration_ns: end.zip(start).and_then(|(e, s)| e.checked_sub(s)),
        });
    }
    let (duration, depth, call) = graph_columns(f)?;
    // `}`, or `} /* func */` with funcgraph-tail.
    if !call.starts_with('}') {
        return None;
    }
    Some(Kind::GraphExit {
        depth,
        duration_ns: duration,
    })
}

/// trace-cmd's graph columns: the duration (when printed), the depth (the indent after
/// `|  `, two spaces a level) and the call text.
fn graph_columns(f: &str) -> Option<(Option<u64>, u32, &str)> {
    let (left, right) = f.split_once('|')?;
    let call = right.trim_start_matches(' ');
    let indent = right.len() - call.len();
    let depth = u32::try_from(indent.checked_sub(2)? / 2).ok()?;
    Some((duration(left), depth, call.trim_end()))
}

/// `1.500 us`, `+ 12.250 us`, `! 123.456 us` (an overhead mark before it) as ns.
fn duration(text: &str) -> Option<u64> {
    let text = text.trim();
    let number = text.strip_suffix("us")?.trim_end();
    let number = number.rsplit(' ').next()?;
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty()
        || frac.len() > 3
        || !(whole.bytes().chain(frac.bytes())).all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let us: u64 = whole.parse().ok()?;
    let frac_ns: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse::<u64>().ok()? * 10u64.pow(3 - frac.len() as u32)
    };
    us.checked_mul(1000)?.checked_add(frac_ns)
}

/// `do_idle (2)...` → the name and the depth in parentheses.
fn name_depth(text: &str) -> Option<(&str, u32)> {
    let (name, rest) = text.split_once(" (")?;
    let depth = rest.split_once(')')?.0.trim().parse().ok()?;
    Some((symbol(name)?, depth))
}

/// A function's name as printed, without an offset (`do_idle+0x1a/0x30` → `do_idle`); `None`
/// when empty or not one word.
fn symbol(text: &str) -> Option<&str> {
    let t = text.trim();
    let t = t.split_once('+').map_or(t, |(n, _)| n);
    (!t.is_empty() && !t.contains(char::is_whitespace)).then_some(t)
}

/// The first word of `text`, without a closing parenthesis.
fn word(text: &str) -> &str {
    text.split_whitespace()
        .next()
        .unwrap_or("")
        .trim_end_matches(')')
}

/// A hex number, with or without `0x`.
fn hex(text: &str) -> Option<u64> {
    let t = text.trim();
    u64::from_str_radix(t.strip_prefix("0x").unwrap_or(t), 16).ok()
}

#[cfg(test)]
mod tests {
    use crate::event::{Func, Kind, decode};
    use crate::line::{Line, parse};

    fn kind(line: &str) -> Kind<'_> {
        match parse(line) {
            Line::Event(e) => decode(&e),
            other => panic!("not an event: {other:?}"),
        }
    }

    #[test]
    fn the_function_tracer_in_trace_cmd_the_kernel_and_raw() {
        let want = Kind::Function {
            func: Func::Name("hrtimer_start_range_ns"),
            parent: Func::Name("do_nanosleep"),
        };
        assert_eq!(
            kind(
                "  cyclictest-812   [001]  1234.567890: function:             hrtimer_start_range_ns <-- do_nanosleep"
            ),
            want
        );
        // The kernel's own text: no event name; the line reads as a `function` event.
        let line = "      cyclictest-812     [001] d..1.  1234.567890: hrtimer_start_range_ns <-do_nanosleep";
        let Line::Event(e) = parse(line) else {
            panic!("{line}")
        };
        assert_eq!((e.name, e.cpu, e.pid), ("function", 1, 812));
        assert_eq!(decode(&e), want);
        // With offsets (trace-cmd -O offset, the kernel's sym-offset).
        assert_eq!(
            kind(
                "  bash-2042    [003] d...  12.000001: ata_find_dev.part.14+0x4/0x30 <-__ata_scsi_find_dev+0x1c/0x40"
            ),
            Kind::Function {
                func: Func::Name("ata_find_dev.part.14"),
                parent: Func::Name("__ata_scsi_find_dev"),
            }
        );
        assert_eq!(
            kind(
                "  bash-2042    [003]  12.000001: function: ip=0xffffffff81234560 parent_ip=0xffffffff81000010"
            ),
            Kind::Function {
                func: Func::Addr(0xffff_ffff_8123_4560),
                parent: Func::Addr(0xffff_ffff_8100_0010),
            }
        );
    }

    #[test]
    fn function_graph_as_trace_cmd_prints_it() {
        let head = "          <idle>-0     [001]  1234.567890: ";
        let k = |rest: &str| format!("{:?}", kind(&format!("{head}{rest}")));
        assert_eq!(
            k("funcgraph_entry:                   |  hrtimer_interrupt() {"),
            "GraphEntry { func: Name(\"hrtimer_interrupt\"), depth: 0, leaf_ns: None }"
        );
        assert_eq!(
            k("funcgraph_entry:        1.500 us   |    _raw_spin_lock_irqsave();"),
            "GraphEntry { func: Name(\"_raw_spin_lock_irqsave\"), depth: 1, leaf_ns: Some(1500) }"
        );
        assert_eq!(
            k("funcgraph_entry:      + 12.25 us   |      __hrtimer_run_queues();"),
            "GraphEntry { func: Name(\"__hrtimer_run_queues\"), depth: 2, leaf_ns: Some(12250) }"
        );
        assert_eq!(
            k("funcgraph_exit:       ! 123.456 us |  }"),
            "GraphExit { depth: 0, duration_ns: Some(123456) }"
        );
        assert_eq!(
            k("funcgraph_exit:         0.870 us   |    } /* hrtimer_wakeup */"),
            "GraphExit { depth: 1, duration_ns: Some(870) }"
        );
        // The kernel's print format and the raw fields.
        assert_eq!(
            k("funcgraph_entry: --> hrtimer_interrupt (0)"),
            "GraphEntry { func: Name(\"hrtimer_interrupt\"), depth: 0, leaf_ns: None }"
        );
        assert_eq!(
            k("funcgraph_exit: <-- hrtimer_interrupt (0) (start: 1000  end: 1a00) over: 0"),
            "GraphExit { depth: 0, duration_ns: Some(2560) }"
        );
        assert_eq!(
            k("funcgraph_exit: func=0xffffffff81234560 depth=3 overrun=0 calltime=100 rettime=350"),
            "GraphExit { depth: 3, duration_ns: Some(250) }"
        );
    }

    #[test]
    fn what_does_not_read_is_another_event_never_a_panic() {
        let head = "          <idle>-0     [001]  1234.567890: ";
        for rest in [
            "function: ",
            "function: two words <-- x",
            "funcgraph_entry: |",
            "funcgraph_entry:  99999999999999999999.5 us |  f();",
            "funcgraph_entry: no bar here",
            "funcgraph_exit: 1.5 us |  not_a_brace",
            "funcgraph_exit: <-- f (x)",
            "funcgraph_entry: func=zz depth=1",
        ] {
            assert_eq!(kind(&format!("{head}{rest}")), Kind::Other, "{rest}");
        }
        // Not a function line: two words before the arrow.
        let line = "  bash-2042    [003] d...  12.000001: not one <-word";
        assert!(matches!(parse(line), Line::Malformed(_)), "{line}");
    }
}
