//! The option table: every `key=value` the agent takes, with its parser, the range or form it
//! allows, its default (as option text) and what it sets in the [`Config`]. Adding an option is
//! one entry here (and its field in `Config`); `parse_with` and the error messages read the table.

use std::path::PathBuf;

use super::{parse_duration, parse_sink, Config, ConfigError};
use crate::core::events::{CpuSampler, EventSelection, Latency};
use crate::core::filter::Filter;
use crate::core::units::parse_throttle;
use crate::log::Level;
use crate::sink::push::spec::{self as push, Auth, Url};
use crate::sink::{parse_cardinality, parse_keys};

/// What a parsed value does to the configuration.
pub type Setter = Box<dyn FnOnce(&mut Config)>;

/// One option.
pub struct Opt {
    pub key: &'static str,
    /// May be given more than once in one place (command line or file); every value counts.
    pub repeat: bool,
    /// The default, as the option's own text (`None`: off unless given).
    pub default: Option<&'static str>,
    /// What values are allowed, for the documentation and range errors.
    pub allowed: &'static str,
    pub parse: fn(&'static str, &str) -> Result<Setter, ConfigError>,
}

const MS: i64 = 1_000_000;
const S: i64 = 1_000_000_000;

/// `ring=`: entries per thread ring.
pub const RING_MIN: usize = 16;
pub const RING_MAX: usize = 1 << 20;
pub const RETENTION_MIN_NS: i64 = 3 * S;
pub const DRAIN_MIN_NS: i64 = MS;
pub const DRAIN_MAX_NS: i64 = S;
pub const STACK_DEPTH_MAX: u32 = 2048;
pub const INTERVAL_MIN_NS: i64 = S;

fn set(f: impl FnOnce(&mut Config) + 'static) -> Result<Setter, ConfigError> {
    Ok(Box::new(f))
}

/// `BadValue` for `key`, with what is wrong.
fn bad<'a>(key: &'static str, value: &'a str) -> impl FnOnce(String) -> ConfigError + 'a {
    move |why| ConfigError::BadValue {
        key,
        value: value.into(),
        why,
    }
}

fn number<T: std::str::FromStr>(key: &'static str, value: &str) -> Result<T, ConfigError> {
    value.parse().map_err(|_| ConfigError::BadNumber {
        key,
        value: value.into(),
    })
}

/// `Ok(v)` when `ok`, else `OutOfRange` with the table's `allowed` text.
fn in_range<T>(key: &'static str, value: &str, v: T, ok: bool) -> Result<T, ConfigError> {
    if ok {
        return Ok(v);
    }
    let allowed = lookup(key).map_or("", |o| o.allowed);
    Err(ConfigError::OutOfRange {
        key,
        value: value.into(),
        allowed,
    })
}

/// A ring's entries (`ring=`, `spare_ring=`): a power of two in `RING_MIN..=RING_MAX`.
fn ring_entries(key: &'static str, value: &str) -> Result<usize, ConfigError> {
    let n: usize = number(key, value)?;
    in_range(
        key,
        value,
        n,
        (RING_MIN..=RING_MAX).contains(&n) && n.is_power_of_two(),
    )
}

/// The table, in the order error messages list the keys. `config` is here for that list; the
/// composer (`parse_with`) handles it before the table is consulted.
pub static OPTIONS: [Opt; 28] = [
    Opt {
        key: "sink",
        repeat: true,
        default: Some(super::DEFAULT_SINK),
        allowed: "FORMAT[:PATH|-], FORMAT one of jsonl, pprof, collapsed, svg, jfr",
        parse: |_, v| {
            let spec = parse_sink(v)?;
            set(move |c| c.sinks.push(spec))
        },
    },
    Opt {
        key: "period",
        repeat: false,
        default: Some("20ms"),
        allowed: "a duration",
        parse: |k, v| {
            let ns = parse_duration(k, v)?;
            set(move |c| c.period_ns = ns)
        },
    },
    Opt {
        key: "log",
        repeat: false,
        default: Some("warn"),
        allowed: "error, warn, info, debug",
        parse: |_, v| {
            let level = Level::parse(v).ok_or_else(|| ConfigError::BadLogLevel(v.into()))?;
            set(move |c| c.log_level = level)
        },
    },
    Opt {
        key: "config",
        repeat: false,
        default: None,
        allowed: "a file of key=value lines",
        parse: |_, _| Err(ConfigError::NestedConfig),
    },
    Opt {
        key: "ring",
        repeat: false,
        default: Some("1024"),
        allowed: "a power of two from 16 to 1048576",
        parse: |k, v| {
            let n = ring_entries(k, v)?;
            set(move |c| c.ring_capacity = n)
        },
    },
    Opt {
        key: "spares",
        repeat: false,
        default: Some("on"),
        allowed: "on or off",
        parse: |k, v| {
            let on = match v {
                "on" => true,
                "off" => false,
                _ => return Err(bad(k, v)("expected on or off".to_string())),
            };
            set(move |c| c.spares = on)
        },
    },
    Opt {
        key: "spare_ring",
        repeat: false,
        default: Some("64"),
        allowed: "a power of two from 16 to 1048576 (at most `ring`'s size is used)",
        parse: |k, v| {
            let n = ring_entries(k, v)?;
            set(move |c| c.spare_capacity = n)
        },
    },
    Opt {
        key: "retention",
        repeat: false,
        default: Some("5s"),
        allowed: "at least 3s",
        parse: |k, v| {
            let ns = parse_duration(k, v)?;
            let ns = in_range(k, v, ns, ns >= RETENTION_MIN_NS)?;
            set(move |c| {
                c.retention_ns = ns;
                c.retention_set = true;
            })
        },
    },
    Opt {
        key: "drain",
        repeat: false,
        default: Some("10ms"),
        allowed: "1ms to 1s",
        parse: |k, v| {
            let ns = parse_duration(k, v)?;
            let ns = in_range(k, v, ns, (DRAIN_MIN_NS..=DRAIN_MAX_NS).contains(&ns))?;
            set(move |c| c.drain_interval_ns = ns)
        },
    },
    Opt {
        key: "stack_depth",
        repeat: false,
        default: Some("64"),
        allowed: "1 to 2048",
        parse: |k, v| {
            let n: u32 = number(k, v)?;
            let n = in_range(k, v, n, (1..=STACK_DEPTH_MAX).contains(&n))?;
            set(move |c| c.stack_depth = n)
        },
    },
    Opt {
        key: "interval",
        repeat: false,
        default: None,
        allowed: "at least 1s",
        parse: |k, v| {
            let ns = parse_duration(k, v)?;
            let ns = in_range(k, v, ns, ns >= INTERVAL_MIN_NS)?;
            set(move |c| c.sink_options.interval_ns = Some(ns))
        },
    },
    Opt {
        key: "cardinality",
        repeat: false,
        default: None,
        allowed: "KEY=keep|drop|hash|cap:N, joined by +",
        parse: |k, v| {
            let p = parse_cardinality(v).map_err(bad(k, v))?;
            set(move |c| c.sink_options.cardinality = p)
        },
    },
    Opt {
        key: "collapsed_keys",
        repeat: false,
        default: None,
        allowed: "context keys joined by +",
        parse: |k, v| {
            let keys = parse_keys(v).map_err(bad(k, v))?;
            set(move |c| c.sink_options.collapsed_keys = keys)
        },
    },
    Opt {
        key: "svg_key",
        repeat: false,
        default: None,
        allowed: "one context key",
        parse: |k, v| {
            let mut keys = parse_keys(v).map_err(bad(k, v))?;
            if keys.len() != 1 {
                return Err(bad(k, v)("exactly one key expected".into()));
            }
            let key = keys.remove(0);
            set(move |c| c.sink_options.svg_key = key)
        },
    },
    Opt {
        key: "events",
        repeat: false,
        default: Some("cpu"),
        allowed:
            "presets cpu, native, alloc, lock, park, io and jdk.Name#setting=value, joined by +",
        parse: |k, v| {
            let sel = EventSelection::parse(v).map_err(bad(k, v))?;
            set(move |c| c.events = sel)
        },
    },
    Opt {
        key: "throttle",
        repeat: false,
        default: None,
        allowed: "a period (10ms) or a rate (500/s)",
        parse: |k, v| {
            let t = parse_throttle(v).map_err(bad(k, v))?;
            set(move |c| c.throttle = Some(t))
        },
    },
    Opt {
        key: "latency",
        repeat: false,
        default: Some("default"),
        allowed: "default, live or live:DURATION (1ms to 1s)",
        parse: |k, v| {
            let l = Latency::parse(v).map_err(bad(k, v))?;
            set(move |c| c.latency = l)
        },
    },
    Opt {
        key: "filter",
        repeat: false,
        default: None,
        allowed: "a RecordingContextFilter expression",
        parse: |k, v| {
            let f = Filter::parse(v).map_err(bad(k, v))?;
            set(move |c| c.filter = f)
        },
    },
    Opt {
        key: "push",
        repeat: false,
        default: None,
        allowed: "http[s]://HOST[:PORT][/PATH]",
        parse: |k, v| {
            let url = Url::parse(v).map_err(bad(k, v))?;
            set(move |c| c.push.url = Some(url))
        },
    },
    Opt {
        key: "push_app",
        repeat: false,
        default: None,
        allowed: "an application name",
        parse: |k, v| {
            let app = push::parse_app(v).map_err(bad(k, v))?;
            set(move |c| c.push.app = Some(app))
        },
    },
    Opt {
        key: "push_labels",
        repeat: false,
        default: None,
        allowed: "K=V joined by +",
        parse: |k, v| {
            let labels = push::parse_labels(v).map_err(bad(k, v))?;
            set(move |c| c.push.labels = labels)
        },
    },
    Opt {
        key: "push_keys",
        repeat: false,
        default: None,
        allowed: "context keys joined by +",
        parse: |k, v| {
            let keys = parse_keys(v).map_err(bad(k, v))?;
            set(move |c| c.push.keys = Some(keys))
        },
    },
    Opt {
        key: "push_budget",
        repeat: false,
        default: None,
        allowed: "a number of label values",
        parse: |k, v| {
            let n = push::parse_budget(v).map_err(bad(k, v))?;
            set(move |c| c.push.budget = Some(n))
        },
    },
    Opt {
        key: "push_tenant",
        repeat: false,
        default: None,
        allowed: "a tenant id (X-Scope-OrgID)",
        parse: |k, v| {
            let t = push::parse_tenant(v).map_err(bad(k, v))?;
            set(move |c| c.push.tenant = Some(t))
        },
    },
    Opt {
        key: "push_auth",
        repeat: false,
        default: None,
        allowed: "basic:USER:PASSWORD_ENV or bearer:TOKEN_ENV",
        parse: |k, v| {
            let a: Auth = Auth::parse(v).map_err(bad(k, v))?;
            set(move |c| c.push.auth = Some(a))
        },
    },
    Opt {
        key: "push_ca",
        repeat: false,
        default: None,
        allowed: "a PEM file",
        parse: |k, v| {
            if v.is_empty() {
                return Err(bad(k, v)("expected a PEM file".into()));
            }
            let path = PathBuf::from(v);
            set(move |c| c.push.ca = Some(path))
        },
    },
    Opt {
        key: "cpu_sampler",
        repeat: false,
        default: Some("execution"),
        allowed: "execution or cputime",
        parse: |k, v| {
            let s = CpuSampler::parse(v).map_err(bad(k, v))?;
            set(move |c| c.cpu_sampler = s)
        },
    },
    Opt {
        key: "jfr_max_size",
        repeat: false,
        default: None,
        allowed: "a size of at least 1m (k, m, g)",
        parse: |k, v| {
            let n = crate::sink::jfr::parse_max_size(v).map_err(bad(k, v))?;
            set(move |c| c.sink_options.jfr_max_size = Some(n))
        },
    },
];

/// The entry of `key`.
pub fn lookup(key: &str) -> Option<&'static Opt> {
    OPTIONS.iter().find(|o| o.key == key)
}

/// Every key, in the table's order, for error messages.
pub fn known_keys() -> String {
    OPTIONS.iter().map(|o| o.key).collect::<Vec<_>>().join(", ")
}
