//! Agent options: `key=value` items separated by commas (the `-agentpath:...=OPTIONS` string),
//! plus `config=FILE` whose lines are the same `key=value` items, one per line.
//!
//! Precedence: options given on the command line override the file's, wherever `config=` appears
//! among them. When the command line names any `sink`, its sinks replace the file's sinks.
//! A non-repeatable key given twice in the same place (command line or file) is an error; `sink`
//! may repeat. The file may not contain `config=` itself.
//!
//! The aggregated sinks (pprof, collapsed, svg) take the global options `interval`,
//! `cardinality`, `collapsed_keys` and `svg_key`; after parsing they are copied, with `period`
//! and the value plan of `events=` ([`crate::core::value::ValuePlan`]), into every [`SinkSpec`] as its
//! [`SinkOptions`] (what a sink needs when it is opened).
//!
//! Everything here is pure: [`parse_with`] takes the file reader as a parameter.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::log::io_message;
use crate::log::Level;
pub use crate::sink::spec::{Output, SinkFormat, SinkSpec};
use crate::sink::{parse_cardinality, parse_keys};
pub use crate::sink::{Policy, SinkOptions};

/// Option keys, in the order shown in error messages.
pub const KNOWN_KEYS: [&str; 26] = [
    "sink",
    "period",
    "log",
    "config",
    "ring",
    "retention",
    "drain",
    "stack_depth",
    "interval",
    "cardinality",
    "collapsed_keys",
    "svg_key",
    "events",
    "throttle",
    "latency",
    "filter",
    "push",
    "push_app",
    "push_labels",
    "push_keys",
    "push_budget",
    "push_tenant",
    "push_auth",
    "push_ca",
    "cpu_sampler",
    "jfr_max_size",
];

/// Where no `sink` is given: JSON lines into the working directory, one file per process.
pub const DEFAULT_SINK: &str = "jsonl:jfrctx-%p.jsonl";

const MS: i64 = 1_000_000;
const S: i64 = 1_000_000_000;

pub const RING_MIN: usize = 16;
pub const RING_MAX: usize = 1 << 20;
pub const RETENTION_MIN_NS: i64 = 3 * S;
pub const DRAIN_MIN_NS: i64 = MS;
pub const DRAIN_MAX_NS: i64 = S;
pub const STACK_DEPTH_MAX: u32 = 2048;
pub const INTERVAL_MIN_NS: i64 = S;

/// The agent's configuration after parsing and validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub sinks: Vec<SinkSpec>,
    /// `jdk.ExecutionSample` period in nanoseconds (default 20 ms).
    pub period_ns: i64,
    /// Log level (default `warn`).
    pub log_level: Level,
    /// Entries per thread ring: a power of two in `16..=1<<20` (default 1024).
    pub ring_capacity: usize,
    /// How long transition history is kept, in nanoseconds (default 5 s, at least 3 s).
    pub retention_ns: i64,
    /// Whether `retention=` was given (else live mode may shorten it, see `LIVE_RETENTION_NS`).
    pub retention_set: bool,
    /// Worker drain interval in nanoseconds (default 10 ms, `1ms..=1s`).
    pub drain_interval_ns: i64,
    /// Maximum recorded stack depth (default 64, `1..=2048`).
    pub stack_depth: u32,
    /// Options of the aggregated sinks, also copied into every `sinks[i].options`.
    pub sink_options: SinkOptions,
    /// JFR events to record (`events=`, default `cpu`).
    pub events: crate::core::events::EventSelection,
    /// `jdk.CPUTimeSample` throttle as a JFR setting value (`throttle=`; default: the period).
    pub throttle: Option<String>,
    /// The `cpu` preset's event (`cpu_sampler=execution|cputime`, default `execution`).
    pub cpu_sampler: crate::core::events::CpuSampler,
    /// Sample → sink delivery (`latency=default|live|live:DURATION`).
    pub latency: crate::core::events::Latency,
    /// `filter=`: the initial `RecordingContextFilter` (`None`: every sample passes).
    pub filter: Option<crate::core::filter::Filter>,
    /// `push=URL`, `push_app=NAME`, `push_labels=K=V+K=V` (`push.url` `None`: no push).
    pub push: crate::sink::push::spec::PushSpec,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sinks: vec![SinkSpec::new(
                SinkFormat::Jsonl,
                Output::File(PathBuf::from("jfrctx-%p.jsonl")),
            )],
            period_ns: 20 * MS,
            log_level: Level::Warn,
            ring_capacity: 1024,
            retention_ns: 5 * S,
            retention_set: false,
            drain_interval_ns: 10 * MS,
            stack_depth: 64,
            sink_options: SinkOptions::default(),
            events: crate::core::events::EventSelection::default(),
            throttle: None,
            cpu_sampler: crate::core::events::CpuSampler::default(),
            latency: crate::core::events::Latency::Default,
            filter: None,
            push: crate::sink::push::spec::PushSpec::default(),
        }
    }
}

/// A configuration problem. `Display` is one line naming it, without the `jfrctx:` prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    UnknownOption(String),
    /// A command-line item without `=` (`None`: a config file line, located by `InFile`).
    MissingEquals(Option<String>),
    BadDuration {
        key: &'static str,
        value: String,
    },
    BadNumber {
        key: &'static str,
        value: String,
    },
    OutOfRange {
        key: &'static str,
        value: String,
        allowed: &'static str,
    },
    BadLogLevel(String),
    EmptySink,
    EmptySinkTarget(String),
    UnknownSinkFormat(String),
    /// A list-valued option that does not parse; `why` says what is wrong.
    BadValue {
        key: &'static str,
        value: String,
        why: String,
    },
    Duplicate(&'static str),
    NestedConfig,
    EmptyConfigPath,
    ReadFile {
        path: PathBuf,
        message: String,
    },
    InFile {
        path: PathBuf,
        line: usize,
        error: Box<ConfigError>,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::UnknownOption(k) => {
                write!(f, "unknown option '{k}' (known: {})", KNOWN_KEYS.join(", "))
            }
            ConfigError::MissingEquals(Some(item)) => {
                write!(f, "missing '=' in option '{item}' (expected key=value)")
            }
            ConfigError::MissingEquals(None) => f.write_str("missing '='"),
            ConfigError::BadDuration { key, value } => {
                write!(
                    f,
                    "bad duration '{value}' for {key} (expected e.g. 20ms, 1s)"
                )
            }
            ConfigError::BadNumber { key, value } => {
                write!(f, "bad number '{value}' for {key}")
            }
            ConfigError::OutOfRange {
                key,
                value,
                allowed,
            } => write!(f, "{key} '{value}' out of range (allowed: {allowed})"),
            ConfigError::BadLogLevel(v) => {
                write!(f, "bad log level '{v}' (known: error, warn, info, debug)")
            }
            ConfigError::EmptySink => f.write_str("empty sink"),
            ConfigError::EmptySinkTarget(v) => {
                write!(
                    f,
                    "empty target in sink '{v}' (expected e.g. jsonl:/tmp/s.jsonl or jsonl:-)"
                )
            }
            ConfigError::UnknownSinkFormat(v) => {
                let known: Vec<&str> = SinkFormat::ALL.iter().map(|f| f.name()).collect();
                write!(f, "unknown sink format '{v}' (known: {})", known.join(", "))
            }
            ConfigError::BadValue { key, value, why } => {
                write!(f, "bad {key} '{value}': {why}")
            }
            ConfigError::Duplicate(k) => write!(f, "option '{k}' given twice"),
            ConfigError::NestedConfig => f.write_str("config= is not allowed inside a config file"),
            ConfigError::EmptyConfigPath => f.write_str("empty path for config"),
            ConfigError::ReadFile { path, message } => {
                write!(f, "config file {}: {message}", path.display())
            }
            ConfigError::InFile { path, line, error } => {
                write!(f, "config file {} line {line}: {error}", path.display())
            }
        }
    }
}

impl std::error::Error for ConfigError {}

/// Parses `FORMAT:TARGET`, or a bare `FORMAT` (target `jfrctx-%p.<ext>`, for svg the
/// directory `jfrctx-%p-svg`). pprof and svg cannot write to stdout (`-`).
pub fn parse_sink(value: &str) -> Result<SinkSpec, ConfigError> {
    let value = value.trim();
    if value.is_empty() {
        return Err(ConfigError::EmptySink);
    }
    let (format, target) = match value.split_once(':') {
        Some((f, t)) => (f.trim(), Some(t.trim())),
        None => (value, None),
    };
    let format =
        SinkFormat::parse(format).ok_or_else(|| ConfigError::UnknownSinkFormat(format.into()))?;
    let target = match target {
        None if format == SinkFormat::Svg => Output::File(PathBuf::from("jfrctx-%p-svg")),
        None => Output::File(PathBuf::from(format!("jfrctx-%p.{}", format.extension()))),
        Some("") => return Err(ConfigError::EmptySinkTarget(value.into())),
        Some("-")
            if matches!(
                format,
                SinkFormat::Pprof | SinkFormat::Svg | SinkFormat::Jfr
            ) =>
        {
            return Err(ConfigError::BadValue {
                key: "sink",
                value: value.into(),
                why: format!("{} cannot write to stdout (give a path)", format.name()),
            });
        }
        Some("-") => Output::Stdout,
        Some(path) => Output::File(PathBuf::from(path)),
    };
    Ok(SinkSpec::new(format, target))
}

/// Parses the agent options, reading `config=FILE` from the file system.
pub fn parse(options: &str) -> Result<Config, ConfigError> {
    parse_with(options, &|p: &Path| std::fs::read_to_string(p))
}

/// Parses the agent options with `read_file` used for `config=FILE`.
pub fn parse_with(
    options: &str,
    read_file: &dyn Fn(&Path) -> io::Result<String>,
) -> Result<Config, ConfigError> {
    let mut cli = Layer::default();
    let mut config_path: Option<PathBuf> = None;
    for item in options.split(',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| ConfigError::MissingEquals(Some(item.to_string())))?;
        let (key, value) = (key.trim(), value.trim());
        if key == "config" {
            if config_path.is_some() {
                return Err(ConfigError::Duplicate("config"));
            }
            if value.is_empty() {
                return Err(ConfigError::EmptyConfigPath);
            }
            config_path = Some(PathBuf::from(value));
        } else {
            cli.set(key, value)?;
        }
    }

    let mut file = Layer::default();
    if let Some(path) = config_path {
        let text = read_file(&path).map_err(|e| ConfigError::ReadFile {
            path: path.clone(),
            message: io_message(&e),
        })?;
        file = parse_file(&path, &text)?;
    }

    let mut config = Config::default();
    file.apply(&mut config);
    cli.apply(&mut config);
    config.sink_options.period_ns = config.period_ns;
    // HotSpot turns a CPU-time throttle rate into a period with the active processor count.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    config.sink_options.values = crate::core::value::ValuePlan::new(
        &config.events,
        config.period_ns,
        config.throttle.as_deref(),
        config.cpu_sampler,
        cpus,
    );
    if config.throttle.is_some() && config.cpu_sampler != crate::core::events::CpuSampler::CpuTime {
        return Err(ConfigError::BadValue {
            key: "throttle",
            value: config.throttle.clone().unwrap_or_default(),
            why: "throttle sets jdk.CPUTimeSample, which the cpu preset records only with \
                  cpu_sampler=cputime (the default, execution, samples at period=)"
                .into(),
        });
    }
    for spec in &mut config.sinks {
        let rotates = config.sink_options.interval_ns.is_some() && spec.format != SinkFormat::Jsonl;
        if rotates && spec.target == Output::Stdout {
            return Err(ConfigError::BadValue {
                key: "sink",
                value: spec.to_string(),
                why: "interval cannot rotate stdout (give a path)".into(),
            });
        }
        spec.options = config.sink_options.clone();
    }
    if let Some((key, value)) = config.push.orphan() {
        return Err(ConfigError::BadValue {
            key,
            value,
            why: "needs push=URL".into(),
        });
    }
    Ok(config)
}

fn parse_file(path: &Path, text: &str) -> Result<Layer, ConfigError> {
    let mut layer = Layer::default();
    for (i, line) in text.lines().enumerate() {
        let at = |error: ConfigError| ConfigError::InFile {
            path: path.to_path_buf(),
            line: i + 1,
            error: Box::new(error),
        };
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| at(ConfigError::MissingEquals(None)))?;
        let (key, value) = (key.trim(), value.trim());
        if key == "config" {
            return Err(at(ConfigError::NestedConfig));
        }
        layer.set(key, value).map_err(at)?;
    }
    Ok(layer)
}

/// The options given in one place (command line or file), validated, not yet defaulted.
#[derive(Default)]
struct Layer {
    sinks: Vec<SinkSpec>,
    period_ns: Option<i64>,
    log_level: Option<Level>,
    ring_capacity: Option<usize>,
    retention_ns: Option<i64>,
    drain_interval_ns: Option<i64>,
    stack_depth: Option<u32>,
    interval_ns: Option<i64>,
    cardinality: Option<Vec<(String, Policy)>>,
    collapsed_keys: Option<Vec<String>>,
    svg_key: Option<String>,
    events: Option<crate::core::events::EventSelection>,
    throttle: Option<String>,
    cpu_sampler: Option<crate::core::events::CpuSampler>,
    latency: Option<crate::core::events::Latency>,
    filter: Option<Option<crate::core::filter::Filter>>,
    push: Option<crate::sink::push::spec::Url>,
    push_app: Option<String>,
    push_labels: Option<Vec<(String, String)>>,
    push_keys: Option<Vec<String>>,
    push_budget: Option<u32>,
    push_tenant: Option<String>,
    push_auth: Option<crate::sink::push::spec::Auth>,
    push_ca: Option<PathBuf>,
    jfr_max_size: Option<u64>,
}

impl Layer {
    fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        match key {
            "sink" => self.sinks.push(parse_sink(value)?),
            "period" => once(
                &mut self.period_ns,
                "period",
                parse_duration("period", value)?,
            )?,
            "log" => {
                let level =
                    Level::parse(value).ok_or_else(|| ConfigError::BadLogLevel(value.into()))?;
                once(&mut self.log_level, "log", level)?
            }
            "ring" => {
                let n: usize = parse_number("ring", value)?;
                if !(RING_MIN..=RING_MAX).contains(&n) || !n.is_power_of_two() {
                    return Err(ConfigError::OutOfRange {
                        key: "ring",
                        value: value.into(),
                        allowed: "a power of two from 16 to 1048576",
                    });
                }
                once(&mut self.ring_capacity, "ring", n)?
            }
            "retention" => {
                let ns = parse_duration("retention", value)?;
                if ns < RETENTION_MIN_NS {
                    return Err(ConfigError::OutOfRange {
                        key: "retention",
                        value: value.into(),
                        allowed: "at least 3s",
                    });
                }
                once(&mut self.retention_ns, "retention", ns)?
            }
            "drain" => {
                let ns = parse_duration("drain", value)?;
                if !(DRAIN_MIN_NS..=DRAIN_MAX_NS).contains(&ns) {
                    return Err(ConfigError::OutOfRange {
                        key: "drain",
                        value: value.into(),
                        allowed: "1ms to 1s",
                    });
                }
                once(&mut self.drain_interval_ns, "drain", ns)?
            }
            "stack_depth" => {
                let n: u32 = parse_number("stack_depth", value)?;
                if !(1..=STACK_DEPTH_MAX).contains(&n) {
                    return Err(ConfigError::OutOfRange {
                        key: "stack_depth",
                        value: value.into(),
                        allowed: "1 to 2048",
                    });
                }
                once(&mut self.stack_depth, "stack_depth", n)?
            }
            "interval" => {
                let ns = parse_duration("interval", value)?;
                if ns < INTERVAL_MIN_NS {
                    return Err(ConfigError::OutOfRange {
                        key: "interval",
                        value: value.into(),
                        allowed: "at least 1s",
                    });
                }
                once(&mut self.interval_ns, "interval", ns)?
            }
            "cardinality" => {
                let v = parse_cardinality(value).map_err(|why| bad_value(key, value, why))?;
                once(&mut self.cardinality, "cardinality", v)?
            }
            "collapsed_keys" => {
                let v = parse_keys(value).map_err(|why| bad_value(key, value, why))?;
                once(&mut self.collapsed_keys, "collapsed_keys", v)?
            }
            "svg_key" => match parse_keys(value) {
                Ok(mut v) if v.len() == 1 => once(&mut self.svg_key, "svg_key", v.remove(0))?,
                Ok(_) => return Err(bad_value(key, value, "exactly one key expected".into())),
                Err(why) => return Err(bad_value(key, value, why)),
            },
            "events" => {
                let v = crate::core::events::EventSelection::parse(value)
                    .map_err(|why| bad_value(key, value, why))?;
                once(&mut self.events, "events", v)?
            }
            "throttle" => {
                let v = crate::core::units::parse_throttle(value)
                    .map_err(|why| bad_value(key, value, why))?;
                once(&mut self.throttle, "throttle", v)?
            }
            "cpu_sampler" => {
                let v = crate::core::events::CpuSampler::parse(value)
                    .map_err(|why| bad_value(key, value, why))?;
                once(&mut self.cpu_sampler, "cpu_sampler", v)?
            }
            "latency" => {
                let v = crate::core::events::Latency::parse(value)
                    .map_err(|why| bad_value(key, value, why))?;
                once(&mut self.latency, "latency", v)?
            }
            "filter" => {
                let v = crate::core::filter::Filter::parse(value)
                    .map_err(|why| bad_value(key, value, why))?;
                once(&mut self.filter, "filter", v)?
            }
            "push" => {
                let v = crate::sink::push::spec::Url::parse(value)
                    .map_err(|why| bad_value(key, value, why))?;
                once(&mut self.push, "push", v)?
            }
            "push_app" => {
                let v = crate::sink::push::spec::parse_app(value)
                    .map_err(|why| bad_value(key, value, why))?;
                once(&mut self.push_app, "push_app", v)?
            }
            "push_labels" => {
                let v = crate::sink::push::spec::parse_labels(value)
                    .map_err(|why| bad_value(key, value, why))?;
                once(&mut self.push_labels, "push_labels", v)?
            }
            "push_keys" => {
                let v = parse_keys(value).map_err(|why| bad_value(key, value, why))?;
                once(&mut self.push_keys, "push_keys", v)?
            }
            "push_budget" => {
                let v = crate::sink::push::spec::parse_budget(value)
                    .map_err(|why| bad_value(key, value, why))?;
                once(&mut self.push_budget, "push_budget", v)?
            }
            "push_tenant" => {
                let v = crate::sink::push::spec::parse_tenant(value)
                    .map_err(|why| bad_value(key, value, why))?;
                once(&mut self.push_tenant, "push_tenant", v)?
            }
            "push_auth" => {
                let v = crate::sink::push::spec::Auth::parse(value)
                    .map_err(|why| bad_value(key, value, why))?;
                once(&mut self.push_auth, "push_auth", v)?
            }
            "push_ca" => {
                if value.is_empty() {
                    return Err(bad_value(key, value, "expected a PEM file".into()));
                }
                once(&mut self.push_ca, "push_ca", PathBuf::from(value))?
            }
            "jfr_max_size" => {
                let v = crate::sink::jfr::parse_max_size(value)
                    .map_err(|why| bad_value(key, value, why))?;
                once(&mut self.jfr_max_size, "jfr_max_size", v)?
            }
            _ => return Err(ConfigError::UnknownOption(key.into())),
        }
        Ok(())
    }

    fn apply(self, config: &mut Config) {
        if !self.sinks.is_empty() {
            config.sinks = self.sinks;
        }
        if let Some(v) = self.period_ns {
            config.period_ns = v;
        }
        if let Some(v) = self.log_level {
            config.log_level = v;
        }
        if let Some(v) = self.ring_capacity {
            config.ring_capacity = v;
        }
        if let Some(v) = self.retention_ns {
            config.retention_ns = v;
            config.retention_set = true;
        }
        if let Some(v) = self.drain_interval_ns {
            config.drain_interval_ns = v;
        }
        if let Some(v) = self.stack_depth {
            config.stack_depth = v;
        }
        let o = &mut config.sink_options;
        o.interval_ns = self.interval_ns.or(o.interval_ns);
        o.jfr_max_size = self.jfr_max_size.or(o.jfr_max_size);
        o.cardinality = self
            .cardinality
            .unwrap_or(std::mem::take(&mut o.cardinality));
        o.collapsed_keys = self
            .collapsed_keys
            .unwrap_or(std::mem::take(&mut o.collapsed_keys));
        o.svg_key = self.svg_key.unwrap_or(std::mem::take(&mut o.svg_key));
        if let Some(v) = self.events {
            config.events = v;
        }
        if let Some(v) = self.throttle {
            config.throttle = Some(v);
        }
        if let Some(v) = self.cpu_sampler {
            config.cpu_sampler = v;
        }
        if let Some(v) = self.latency {
            config.latency = v;
        }
        if let Some(v) = self.filter {
            config.filter = v;
        }
        if let Some(v) = self.push {
            config.push.url = Some(v);
        }
        if let Some(v) = self.push_app {
            config.push.app = Some(v);
        }
        if let Some(v) = self.push_labels {
            config.push.labels = v;
        }
        let p = &mut config.push;
        p.keys = self.push_keys.or(p.keys.take());
        p.budget = self.push_budget.or(p.budget);
        p.tenant = self.push_tenant.or(p.tenant.take());
        p.auth = self.push_auth.or(p.auth.take());
        p.ca = self.push_ca.or(p.ca.take());
    }
}

/// `BadValue` for one of the sink options (`key` is one of [`KNOWN_KEYS`]).
fn bad_value(key: &str, value: &str, why: String) -> ConfigError {
    let key = KNOWN_KEYS
        .into_iter()
        .find(|k| *k == key)
        .unwrap_or("option");
    ConfigError::BadValue {
        key,
        value: value.into(),
        why,
    }
}

fn once<T>(slot: &mut Option<T>, key: &'static str, value: T) -> Result<(), ConfigError> {
    if slot.is_some() {
        return Err(ConfigError::Duplicate(key));
    }
    *slot = Some(value);
    Ok(())
}

fn parse_number<T: std::str::FromStr>(key: &'static str, value: &str) -> Result<T, ConfigError> {
    value.parse().map_err(|_| ConfigError::BadNumber {
        key,
        value: value.into(),
    })
}

/// A duration by the one unit table ([`crate::core::units::TIME_UNITS`]), strictly positive.
pub fn parse_duration(key: &'static str, value: &str) -> Result<i64, ConfigError> {
    crate::core::units::parse_duration(value).ok_or_else(|| ConfigError::BadDuration {
        key,
        value: value.into(),
    })
}

#[cfg(test)]
mod tests;
