//! The value types every command parses the same way: time values with units, CPU lists and
//! selectors, load specs, percentages, IRQ rules, `--dma-latency`. One parser per kind of
//! value, so `250us` or `2-7` means the same wherever it is typed.

use model::load::LoadSpec;
use model::nanos::parse_nanos;
use model::tune::IrqRule;
use model::{CpuSet, CpuSpec, Nanos};

/// `--format` of the commands whose output is a summary or its JSON document.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TextOrJson {
    /// Lines for a person.
    #[default]
    #[value(alias = "table")]
    Text,
    /// The JSON document, for scripts.
    Json,
}

/// `--dma-latency`: a request in microseconds, or off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaLatency(pub Option<u32>);

/// A time value with its unit: `250us`, `10m`, `2d` (ns, us, ms, s, m, h, d).
pub fn parse_time(text: &str) -> Result<Nanos, String> {
    parse_nanos(text).map_err(|e| e.to_string())
}

/// A time where a bare number is microseconds, as cyclictest reads its -h/--histogram:
/// `400` is 400us; `400us` and `1ms` read as [`parse_time`] reads them.
pub fn parse_time_or_us(text: &str) -> Result<Nanos, String> {
    let bare = text.trim();
    if !bare.is_empty() && bare.bytes().all(|b| b.is_ascii_digit()) {
        return parse_time(&format!("{bare}us"));
    }
    parse_time(text)
}

/// A time where a bare number is seconds, as cyclictest reads its -D/--duration: `60` is 60s;
/// `10m` and `1h` read as [`parse_time`] reads them.
pub fn parse_time_or_s(text: &str) -> Result<Nanos, String> {
    let bare = text.trim();
    if !bare.is_empty() && bare.bytes().all(|b| b.is_ascii_digit()) {
        return parse_time(&format!("{bare}s"));
    }
    parse_time(text)
}

/// A load spec (`cpu:60%,timer-storm`), as `rtlab load --help` describes it.
pub fn parse_load_spec(text: &str) -> Result<LoadSpec, String> {
    LoadSpec::parse(text).map_err(|e| e.to_string())
}

/// A CPU selector: a list (`0-3,6`), `all`, or `!LIST` for all but those.
pub fn parse_cpu_spec(text: &str) -> Result<CpuSpec, String> {
    CpuSpec::parse(text).map_err(|e| e.to_string())
}

/// A CPU selector checked as [`parse_cpu_spec`] does, kept as typed (to pass it on to a
/// child `rtlab measure`).
pub fn parse_cpu_spec_text(text: &str) -> Result<String, String> {
    parse_cpu_spec(text).map(|_| text.to_string())
}

/// A CPU list that names at least one CPU (`2-7`, `1,3`).
pub fn parse_cpu_list(text: &str) -> Result<CpuSet, String> {
    let cpus = CpuSet::parse_list(text)
        .map_err(|e| format!("'{text}' is not a CPU list ({e}); write it like 2-7 or 1,3"))?;
    if cpus.is_empty() {
        return Err(format!("'{text}' names no CPU; write it like 2-7 or 1,3"));
    }
    Ok(cpus)
}

/// A trace ring buffer per CPU: a size with a unit (`8M`, `512K`), or a bare number of KiB
/// (as trace-cmd's `-b` reads it); from 64 KiB to 1 GiB.
pub fn parse_trace_buffer(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let kib = match t.parse::<u64>() {
        Ok(n) => n,
        Err(_) => {
            let bytes = model::load::spec::parse_size(t)
                .map_err(|e| format!("{e}; or give a number of KiB"))?;
            bytes / 1024
        }
    };
    if !(64..=1_048_576).contains(&kib) {
        return Err(format!(
            "'{text}' is outside 64K to 1G (a bare number is KiB)"
        ));
    }
    Ok(kib)
}

/// A percentage as typed: `10%`, `10`, `2.5%`; finite and not negative.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let number = text.trim().strip_suffix('%').unwrap_or(text.trim()).trim();
    match number.parse::<f64>() {
        Ok(pct) if pct.is_finite() && pct >= 0.0 => Ok(pct),
        _ => Err(format!(
            "'{text}' is not a percentage; give one such as 10% or 2.5"
        )),
    }
}

/// An IRQ rule, `PATTERN=[POLICY[:PRIO]][@CPUS]`.
pub fn parse_rule(text: &str) -> Result<IrqRule, String> {
    text.parse()
}

/// `--dma-latency`: `off`, or a whole number of microseconds with its unit.
pub fn parse_dma_latency(text: &str) -> Result<DmaLatency, String> {
    if text.trim().eq_ignore_ascii_case("off") {
        return Ok(DmaLatency(None));
    }
    // A bare number is microseconds, as the kernel and cyclictest's --latency read it.
    let value = parse_time_or_us(text)?;
    if value.get() % 1_000 != 0 {
        return Err(format!(
            "'{text}' is not a whole number of microseconds (the kernel takes us)"
        ));
    }
    let us = u32::try_from(value.get() / 1_000)
        .ok()
        .filter(|&us| us <= i32::MAX as u32)
        .ok_or_else(|| format!("'{text}' is too large for /dev/cpu_dma_latency"))?;
    Ok(DmaLatency(Some(us)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dma_latency_values() {
        assert_eq!(parse_dma_latency("off"), Ok(DmaLatency(None)));
        assert_eq!(parse_dma_latency("0"), Ok(DmaLatency(Some(0))));
        assert_eq!(parse_dma_latency("10us"), Ok(DmaLatency(Some(10))));
        // A bare number is microseconds, as cyclictest's --latency reads it.
        assert_eq!(parse_dma_latency("10"), Ok(DmaLatency(Some(10))));
        assert!(parse_dma_latency("1500ns").is_err());
        assert!(parse_dma_latency("-10").is_err());
    }

    #[test]
    fn cyclictests_bare_numbers_in_its_units() {
        assert_eq!(parse_time_or_us("400"), Ok(Nanos::from_us(400)));
        assert_eq!(parse_time_or_us(" 1000 "), Ok(Nanos::from_us(1000)));
        assert_eq!(parse_time_or_us("1ms"), Ok(Nanos::from_us(1000)));
        assert_eq!(parse_time_or_s("60"), Ok(Nanos::from_secs(60)));
        assert_eq!(parse_time_or_s("10m"), Ok(Nanos::from_secs(600)));
        for bad in ["", "-5", "1.5", "x", "99999999999999999999"] {
            assert!(parse_time_or_us(bad).is_err(), "{bad:?}");
            assert!(parse_time_or_s(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn percentages_with_or_without_the_sign() {
        assert_eq!(parse_percent("10%"), Ok(10.0));
        assert_eq!(parse_percent("10"), Ok(10.0));
        assert_eq!(parse_percent(" 2.5 % "), Ok(2.5));
        assert_eq!(parse_percent("0"), Ok(0.0));
        for bad in ["-5%", "ten", "", "%", "inf", "NaN"] {
            let err = parse_percent(bad).unwrap_err();
            assert!(err.contains("is not a percentage"), "{bad}: {err}");
        }
    }
}
