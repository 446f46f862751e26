//! Time values: [`Nanos`], the unit-carrying syntax people type (`250us`, `10m`, `1.5ms`) and
//! the short human form rtlab prints.
//!
//! Every time value in rtlab is an integer count of nanoseconds. A value typed without a unit is
//! refused (except `0`), because cyclictest's `-i 1000` (microseconds) and `-D 60` (seconds)
//! show how easily a bare number is misread.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A span of time in nanoseconds. Serialized as a plain integer in fields named `*_ns`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Nanos(pub u64);

impl Nanos {
    /// Zero.
    pub const ZERO: Nanos = Nanos(0);
    /// One microsecond.
    pub const MICROSECOND: Nanos = Nanos(1_000);
    /// One millisecond.
    pub const MILLISECOND: Nanos = Nanos(1_000_000);
    /// One second.
    pub const SECOND: Nanos = Nanos(1_000_000_000);

    /// From whole microseconds.
    pub const fn from_us(us: u64) -> Nanos {
        Nanos(us.saturating_mul(1_000))
    }

    /// From whole milliseconds.
    pub const fn from_ms(ms: u64) -> Nanos {
        Nanos(ms.saturating_mul(1_000_000))
    }

    /// From whole seconds.
    pub const fn from_secs(s: u64) -> Nanos {
        Nanos(s.saturating_mul(1_000_000_000))
    }

    /// The raw nanosecond count.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// Whole microseconds, truncated (as cyclictest reports them).
    pub const fn as_us_trunc(self) -> u64 {
        self.0 / 1_000
    }

    /// Microseconds as a float, for display.
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1_000.0
    }

    /// As a [`std::time::Duration`].
    pub const fn to_duration(self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.0)
    }
}

impl From<std::time::Duration> for Nanos {
    fn from(d: std::time::Duration) -> Nanos {
        Nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

/// Why a typed time value was refused. The message names the value and the fix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseNanosError {
    /// Nothing was typed.
    #[error("empty time value; write a number with a unit, e.g. 250us or 10s")]
    Empty,
    /// A number without a unit.
    #[error("'{0}' has no unit; write it with one of ns, us, ms, s, m, h, d, e.g. {0}us or {0}s")]
    NoUnit(String),
    /// A unit rtlab does not know.
    #[error("'{value}' has an unknown unit '{unit}'; use ns, us, ms, s, m, h or d")]
    UnknownUnit {
        /// The whole value as typed.
        value: String,
        /// The unit part.
        unit: String,
    },
    /// The number part is not a number.
    #[error("'{0}' is not a time value; write a number with a unit, e.g. 250us or 1.5ms")]
    NotANumber(String),
    /// The value has a fraction of a nanosecond, or too many digits.
    #[error("'{0}' is finer than one nanosecond")]
    TooFine(String),
    /// The value does not fit in 64 bits of nanoseconds (about 584 years).
    #[error("'{0}' is too large")]
    TooLarge(String),
}

/// Parses a time value with a unit: `ns`, `us` (or `µs`), `ms`, `s`, `m`, `h`, `d`.
///
/// A decimal fraction is allowed (`1.5ms`); a bare `0` is allowed because it means the same in
/// every unit; anything else without a unit is refused. Surrounding whitespace is ignored.
pub fn parse_nanos(text: &str) -> Result<Nanos, ParseNanosError> {
    let value = text.trim();
    if value.is_empty() {
        return Err(ParseNanosError::Empty);
    }
    let split = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    if number.is_empty() {
        return Err(ParseNanosError::NotANumber(value.to_string()));
    }
    let (whole, frac) = match number.split_once('.') {
        Some((w, f)) => (w, f),
        None => (number, ""),
    };
    if frac.contains('.') || (whole.is_empty() && frac.is_empty()) {
        return Err(ParseNanosError::NotANumber(value.to_string()));
    }
    let scale: u64 = match unit.trim() {
        "" => {
            if number.bytes().all(|c| c == b'0' || c == b'.') {
                return Ok(Nanos::ZERO);
            }
            return Err(ParseNanosError::NoUnit(value.to_string()));
        }
        "ns" => 1,
        "us" | "µs" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        other => {
            return Err(ParseNanosError::UnknownUnit {
                value: value.to_string(),
                unit: other.to_string(),
            });
        }
    };
    let too_large = || ParseNanosError::TooLarge(value.to_string());
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| too_large())?
    };
    let mut total = whole.checked_mul(scale).ok_or_else(too_large)?;
    // The fraction: digits beyond the unit's nanosecond resolution must be zero.
    let mut place = scale;
    for digit in frac.bytes() {
        let d = u64::from(digit - b'0');
        if !place.is_multiple_of(10) {
            if d != 0 {
                return Err(ParseNanosError::TooFine(value.to_string()));
            }
            continue;
        }
        place /= 10;
        total = total.checked_add(d * place).ok_or_else(too_large)?;
    }
    Ok(Nanos(total))
}

impl FromStr for Nanos {
    type Err = ParseNanosError;
    fn from_str(s: &str) -> Result<Nanos, ParseNanosError> {
        parse_nanos(s)
    }
}

/// Prints the shortest exact form with the largest fitting unit: `1ms`, `250us`, `1.5ms`,
/// `10m`, `90s`, `1234ns`.
impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u64, &str); 7] = [
            (86_400_000_000_000, "d"),
            (3_600_000_000_000, "h"),
            (60_000_000_000, "m"),
            (1_000_000_000, "s"),
            (1_000_000, "ms"),
            (1_000, "us"),
            (1, "ns"),
        ];
        let n = self.0;
        if n == 0 {
            return f.write_str("0s");
        }
        // Whole multiples of a large unit first (10m, 3h, 2d).
        for (scale, unit) in UNITS {
            if n.is_multiple_of(scale) {
                return write!(f, "{}{}", n / scale, unit);
            }
        }
        unreachable!("every value is a multiple of 1ns")
    }
}

/// A fixed-precision microsecond figure for tables: `12.3`, `1034.0`.
pub fn format_us(value: Nanos, decimals: usize) -> String {
    format!("{:.*}", decimals, value.as_us_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_unit() {
        assert_eq!(parse_nanos("250ns"), Ok(Nanos(250)));
        assert_eq!(parse_nanos("250us"), Ok(Nanos(250_000)));
        assert_eq!(parse_nanos("250µs"), Ok(Nanos(250_000)));
        assert_eq!(parse_nanos("1ms"), Ok(Nanos(1_000_000)));
        assert_eq!(parse_nanos("60s"), Ok(Nanos::from_secs(60)));
        assert_eq!(parse_nanos("10m"), Ok(Nanos::from_secs(600)));
        assert_eq!(parse_nanos("3h"), Ok(Nanos::from_secs(10_800)));
        assert_eq!(parse_nanos("2d"), Ok(Nanos::from_secs(172_800)));
        assert_eq!(parse_nanos(" 5 ms "), Ok(Nanos::from_ms(5)));
    }

    #[test]
    fn parses_fractions_exactly() {
        assert_eq!(parse_nanos("1.5ms"), Ok(Nanos(1_500_000)));
        assert_eq!(parse_nanos("0.25s"), Ok(Nanos(250_000_000)));
        assert_eq!(parse_nanos(".5us"), Ok(Nanos(500)));
        assert_eq!(parse_nanos("1.000us"), Ok(Nanos(1_000)));
        assert_eq!(
            parse_nanos("1.5000ns"),
            Err(ParseNanosError::TooFine("1.5000ns".into()))
        );
        assert_eq!(
            parse_nanos("1.0001us"),
            Err(ParseNanosError::TooFine("1.0001us".into()))
        );
    }

    #[test]
    fn refuses_bare_numbers_but_zero() {
        assert_eq!(parse_nanos("0"), Ok(Nanos::ZERO));
        assert_eq!(parse_nanos("0.0"), Ok(Nanos::ZERO));
        let err = parse_nanos("1000").unwrap_err();
        assert_eq!(err, ParseNanosError::NoUnit("1000".into()));
        assert!(err.to_string().contains("1000us"), "{err}");
    }

    #[test]
    fn refuses_malformed_values() {
        assert_eq!(parse_nanos(""), Err(ParseNanosError::Empty));
        assert_eq!(parse_nanos("   "), Err(ParseNanosError::Empty));
        assert!(matches!(
            parse_nanos("ms"),
            Err(ParseNanosError::NotANumber(_))
        ));
        assert!(matches!(
            parse_nanos("-1ms"),
            Err(ParseNanosError::NotANumber(_))
        ));
        assert!(matches!(
            parse_nanos("1.2.3ms"),
            Err(ParseNanosError::NotANumber(_))
        ));
        assert!(matches!(
            parse_nanos("."),
            Err(ParseNanosError::NotANumber(_))
        ));
        assert!(matches!(
            parse_nanos("5 parsecs"),
            Err(ParseNanosError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse_nanos("1ms5"),
            Err(ParseNanosError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse_nanos("99999999999999999999d"),
            Err(ParseNanosError::TooLarge(_))
        ));
        assert!(matches!(
            parse_nanos("300000d"),
            Err(ParseNanosError::TooLarge(_))
        ));
    }

    #[test]
    fn displays_shortest_exact_form() {
        assert_eq!(Nanos(0).to_string(), "0s");
        assert_eq!(Nanos::from_ms(1).to_string(), "1ms");
        assert_eq!(Nanos::from_us(250).to_string(), "250us");
        assert_eq!(Nanos(1_500_000).to_string(), "1500us");
        assert_eq!(Nanos::from_secs(600).to_string(), "10m");
        assert_eq!(Nanos::from_secs(90).to_string(), "90s");
        assert_eq!(Nanos::from_secs(172_800).to_string(), "2d");
        assert_eq!(Nanos(1_234).to_string(), "1234ns");
    }

    #[test]
    fn display_round_trips() {
        for n in [
            1u64,
            999,
            1_000,
            1_500_000,
            60_000_000_000,
            86_400_000_000_000,
            123_456_789,
        ] {
            assert_eq!(parse_nanos(&Nanos(n).to_string()), Ok(Nanos(n)));
        }
    }

    proptest::proptest! {
        #[test]
        fn parser_never_panics(s in "\\PC{0,24}") {
            let _ = parse_nanos(&s);
        }

        #[test]
        fn display_round_trips_any(n in 0u64..u64::MAX) {
            proptest::prop_assert_eq!(parse_nanos(&Nanos(n).to_string()), Ok(Nanos(n)));
        }
    }
}
