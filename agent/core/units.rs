//! The one table of time units, shared by every option that takes a duration (`period=`,
//! `retention=`, `drain=`, `interval=`, `latency=live:`) or a rate (`throttle=N/unit`), by the
//! JFR setting values the agent writes (`10ms` → `10 ms`) and by the period read back from a JFR
//! setting. The units are JFR's own (`jdk.jfr.internal.util.ValueParser`: `ns`, `us`, `ms`, `s`,
//! `m`, `h`, `d`), so whatever an option accepts, JFR accepts too. Pure.

/// Unit → nanoseconds.
pub const TIME_UNITS: [(&str, i64); 7] = [
    ("ns", 1),
    ("us", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
    ("d", 86_400_000_000_000),
];

/// The length of `unit` in nanoseconds; `None` when it is not in [`TIME_UNITS`].
pub fn unit_ns(unit: &str) -> Option<i64> {
    TIME_UNITS
        .iter()
        .find(|(u, _)| *u == unit)
        .map(|&(_, ns)| ns)
}

/// `<digits><unit>` (no space) → `(digits, unit)`, the unit checked against [`TIME_UNITS`].
fn split_amount(value: &str) -> Option<(u64, &str)> {
    let split = value.find(|c: char| !c.is_ascii_digit())?;
    let (digits, unit) = value.split_at(split);
    unit_ns(unit)?;
    Some((digits.parse().ok()?, unit))
}

/// `<digits><unit>`, strictly positive, fitting in i64 nanoseconds; `None` otherwise.
pub fn parse_duration(value: &str) -> Option<i64> {
    let (n, unit) = split_amount(value)?;
    let ns = i64::try_from(n).ok()?.checked_mul(unit_ns(unit)?)?;
    (ns > 0).then_some(ns)
}

/// `throttle=`: a CPU-time period (`10ms`, `500us`) or a rate (`500/s`, `20/ms`); returns the JFR
/// setting value (`10 ms`, `500/s`).
pub fn parse_throttle(value: &str) -> Result<String, String> {
    let v = value.trim();
    let bad = || format!("expected a period such as 10ms or a rate such as 500/s, got '{v}'");
    if let Some((n, unit)) = v.split_once('/') {
        let n: u64 = n.parse().map_err(|_| bad())?;
        if n == 0 || unit_ns(unit).is_none() {
            return Err(bad());
        }
        return Ok(format!("{n}/{unit}"));
    }
    parse_duration(v).ok_or_else(bad)?;
    Ok(jfr_timespan(v))
}

/// `10ms` → `10 ms` (JFR's timespan spelling); anything else unchanged.
pub fn jfr_timespan(v: &str) -> String {
    match split_amount(v) {
        Some((_, unit)) => format!("{} {unit}", &v[..v.len() - unit.len()]),
        None => v.to_string(),
    }
}

/// A JFR setting value as nanoseconds per sample: a duration (`20 ms`, `0.5 ms`, `10ms`) or a
/// rate (`500/s`: `cpus` × 1 s / 500, HotSpot's per-thread CPU-time period). `None` when it is
/// neither.
pub fn setting_period_ns(value: &str, cpus: u32) -> Option<i64> {
    let unit = |u: &str| unit_ns(u.trim()).map(|ns| ns as f64);
    let v = value.trim();
    let ns = if let Some((n, u)) = v.split_once('/') {
        let n: f64 = n.trim().parse().ok()?;
        (n > 0.0).then_some(())?;
        f64::from(cpus.max(1)) * unit(u)? / n
    } else {
        let split = v.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let n: f64 = v[..split].parse().ok()?;
        n * unit(&v[split..])?
    };
    (1.0..9.2e18).contains(&ns).then_some(ns.round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_every_unit_of_the_table() {
        assert_eq!(parse_duration("20ms"), Some(20_000_000));
        assert_eq!(parse_duration("1h"), Some(3_600_000_000_000));
        assert_eq!(parse_duration("2d"), Some(172_800_000_000_000));
        for bad in [
            "",
            "ms",
            "10",
            "0s",
            "-1s",
            "1.5s",
            "10 ms",
            "10w",
            "99999999999999d",
        ] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn durations_and_rates_agree_on_units() {
        for (unit, _) in TIME_UNITS {
            assert!(parse_duration(&format!("1{unit}")).is_some(), "{unit}");
            assert_eq!(
                parse_throttle(&format!("3/{unit}")).unwrap(),
                format!("3/{unit}")
            );
            assert!(
                setting_period_ns(&format!("5 {unit}"), 1).is_some(),
                "{unit}"
            );
        }
    }

    #[test]
    fn throttle_and_timespans_in_jfr_spelling() {
        assert_eq!(parse_throttle("10ms").unwrap(), "10 ms");
        assert_eq!(parse_throttle("500/s").unwrap(), "500/s");
        for bad in ["", "0/s", "0ms", "5/w", "x/s", "10", "ms"] {
            assert!(parse_throttle(bad).is_err(), "{bad:?}");
        }
        assert_eq!(jfr_timespan("10ms"), "10 ms");
        assert_eq!(jfr_timespan("true"), "true");
        assert_eq!(jfr_timespan("0.5ms"), "0.5ms");
    }

    #[test]
    fn setting_periods() {
        assert_eq!(setting_period_ns("20 ms", 4), Some(20_000_000));
        assert_eq!(setting_period_ns("0.5 ms", 4), Some(500_000));
        assert_eq!(setting_period_ns("500/s", 4), Some(8_000_000));
        assert_eq!(setting_period_ns("1/h", 1), Some(3_600_000_000_000));
        assert_eq!(setting_period_ns("fast", 4), None);
    }
}
