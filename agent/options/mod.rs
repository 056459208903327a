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

use std::io;
use std::path::{Path, PathBuf};

mod error;
pub mod table;

use crate::log::io_message;
use crate::log::Level;
pub use crate::sink::spec::{Output, SinkFormat, SinkSpec};
pub use crate::sink::{Policy, SinkOptions};
pub use error::ConfigError;
use table::Setter;
pub use table::{
    DRAIN_MAX_NS, DRAIN_MIN_NS, INTERVAL_MIN_NS, RETENTION_MIN_NS, RING_MAX, RING_MIN,
    STACK_DEPTH_MAX,
};

/// Where no `sink` is given: JSON lines into the working directory, one file per process.
pub const DEFAULT_SINK: &str = "jsonl:jfrctx-%p.jsonl";

const MS: i64 = 1_000_000;
const S: i64 = 1_000_000_000;

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
    /// `spares=on` (the default): a thread's first context takes a spare ring the worker made in
    /// advance (no JNI call); `off`: every thread registers its ring through JNI
    /// (ARCHITECTURE.md, "Spare rings").
    pub spares: bool,
    /// `spare_ring=`: entries of a spare ring (default 64); a spare's thread moves to a ring of
    /// `ring_capacity` entries at its first lap (ARCHITECTURE.md, "Spare rings"). Use
    /// [`Config::spare_ring_capacity`], which keeps it at most `ring_capacity`.
    pub spare_capacity: usize,
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
            spares: true,
            spare_capacity: 64,
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

impl Config {
    /// Entries of a spare ring: `spare_ring=`, at most `ring=` (a spare never starts bigger than
    /// a registered ring).
    pub fn spare_ring_capacity(&self) -> usize {
        self.spare_capacity.min(self.ring_capacity)
    }
}

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

/// The options given in one place (command line or file), parsed, in order, not yet applied.
#[derive(Default)]
struct Layer {
    items: Vec<(&'static str, Setter)>,
}

impl Layer {
    fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        let opt = table::lookup(key).ok_or_else(|| ConfigError::UnknownOption(key.into()))?;
        if !opt.repeat && self.items.iter().any(|(k, _)| *k == opt.key) {
            return Err(ConfigError::Duplicate(opt.key));
        }
        self.items.push((opt.key, (opt.parse)(opt.key, value)?));
        Ok(())
    }

    /// Applies this layer over `config`. Sinks given here replace the sinks so far.
    fn apply(self, config: &mut Config) {
        if self.items.iter().any(|(k, _)| *k == "sink") {
            config.sinks.clear();
        }
        for (_, setter) in self.items {
            setter(config);
        }
    }
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
