//! Agent options: `key=value` items separated by commas (the `-agentpath:...=OPTIONS` string),
//! plus `config=FILE` whose lines are the same `key=value` items, one per line.
//!
//! Precedence: options given on the command line override the file's, wherever `config=` appears
//! among them. When the command line names any `sink`, its sinks replace the file's sinks.
//! A non-repeatable key given twice in the same place (command line or file) is an error; `sink`
//! may repeat. The file may not contain `config=` itself.
//!
//! Everything here is pure: [`parse_with`] takes the file reader as a parameter.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::log::Level;

/// Option keys, in the order shown in error messages.
pub const KNOWN_KEYS: [&str; 8] = [
    "sink",
    "period",
    "log",
    "config",
    "ring",
    "retention",
    "drain",
    "stack_depth",
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
    /// Worker drain interval in nanoseconds (default 10 ms, `1ms..=1s`).
    pub drain_interval_ns: i64,
    /// Maximum recorded stack depth (default 64, `1..=2048`).
    pub stack_depth: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sinks: vec![SinkSpec {
                format: SinkFormat::Jsonl,
                target: Output::File(PathBuf::from("jfrctx-%p.jsonl")),
            }],
            period_ns: 20 * MS,
            log_level: Level::Warn,
            ring_capacity: 1024,
            retention_ns: 5 * S,
            drain_interval_ns: 10 * MS,
            stack_depth: 64,
        }
    }
}

/// One `sink=FORMAT:TARGET` option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkSpec {
    pub format: SinkFormat,
    pub target: Output,
}

impl SinkSpec {
    /// Parses `FORMAT:TARGET`, or a bare `FORMAT` (target `jfrctx-%p.<ext>`).
    pub fn parse(value: &str) -> Result<SinkSpec, ConfigError> {
        let value = value.trim();
        if value.is_empty() {
            return Err(ConfigError::EmptySink);
        }
        let (format, target) = match value.split_once(':') {
            Some((f, t)) => (f.trim(), Some(t.trim())),
            None => (value, None),
        };
        let format = SinkFormat::parse(format)
            .ok_or_else(|| ConfigError::UnknownSinkFormat(format.into()))?;
        let target = match target {
            None => Output::File(PathBuf::from(format!("jfrctx-%p.{}", format.extension()))),
            Some("") => return Err(ConfigError::EmptySinkTarget(value.into())),
            Some("-") => Output::Stdout,
            Some(path) => Output::File(PathBuf::from(path)),
        };
        Ok(SinkSpec { format, target })
    }

    /// This spec with `%p` in its path replaced by `pid`.
    pub fn resolve(&self, pid: u32) -> SinkSpec {
        SinkSpec {
            format: self.format,
            target: self.target.resolve(pid),
        }
    }
}

/// `jsonl:/path` or `jsonl:-`: the same text the option takes.
impl fmt::Display for SinkSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.format.name(), self.target)
    }
}

/// Output format of a sink. New formats add a variant here and a file under `sink/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SinkFormat {
    /// One JSON object per sample, one per line.
    Jsonl,
}

impl SinkFormat {
    pub const ALL: [SinkFormat; 1] = [SinkFormat::Jsonl];

    pub fn name(self) -> &'static str {
        match self {
            SinkFormat::Jsonl => "jsonl",
        }
    }

    /// File name extension of the default target.
    pub fn extension(self) -> &'static str {
        match self {
            SinkFormat::Jsonl => "jsonl",
        }
    }

    pub fn parse(s: &str) -> Option<SinkFormat> {
        SinkFormat::ALL.into_iter().find(|f| f.name() == s)
    }
}

/// Where a sink writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Target `-`.
    Stdout,
    /// A path; `%p` stands for the process id until [`Output::resolve`].
    File(PathBuf),
}

impl Output {
    /// The same output with every `%p` in the path replaced by `pid`.
    pub fn resolve(&self, pid: u32) -> Output {
        match self {
            Output::Stdout => Output::Stdout,
            Output::File(p) => Output::File(expand_pid(p, pid)),
        }
    }
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Output::Stdout => f.write_str("-"),
            Output::File(p) => write!(f, "{}", p.display()),
        }
    }
}

/// Replaces every `%p` in `path` by `pid`. Paths that are not UTF-8 are returned unchanged
/// (options arrive as UTF-8, so they cannot contain `%p` in another encoding).
pub fn expand_pid(path: &Path, pid: u32) -> PathBuf {
    match path.to_str() {
        Some(s) if s.contains("%p") => PathBuf::from(s.replace("%p", &pid.to_string())),
        _ => path.to_path_buf(),
    }
}

/// An I/O error's message without the trailing ` (os error N)`.
pub fn io_message(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) if s.ends_with(')') => s[..i].to_string(),
        _ => s,
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
}

impl Layer {
    fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        match key {
            "sink" => self.sinks.push(SinkSpec::parse(value)?),
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
        }
        if let Some(v) = self.drain_interval_ns {
            config.drain_interval_ns = v;
        }
        if let Some(v) = self.stack_depth {
            config.stack_depth = v;
        }
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

/// `<digits><unit>` with unit `ns|us|ms|s|m`, strictly positive, fitting in i64 nanoseconds.
pub fn parse_duration(key: &'static str, value: &str) -> Result<i64, ConfigError> {
    let bad = || ConfigError::BadDuration {
        key,
        value: value.into(),
    };
    let split = value.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (digits, unit) = value.split_at(split);
    if digits.is_empty() {
        return Err(bad());
    }
    let scale: i64 = match unit {
        "ns" => 1,
        "us" => 1_000,
        "ms" => MS,
        "s" => S,
        "m" => 60 * S,
        _ => return Err(bad()),
    };
    let n: i64 = digits.parse().map_err(|_| bad())?;
    match n.checked_mul(scale) {
        Some(ns) if ns > 0 => Ok(ns),
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn ok(options: &str) -> Config {
        match parse_with(options, &no_files) {
            Ok(c) => c,
            Err(e) => panic!("{options:?}: {e}"),
        }
    }

    fn err(options: &str) -> String {
        match parse_with(options, &no_files) {
            Ok(c) => panic!("{options:?} parsed: {c:?}"),
            Err(e) => e.to_string(),
        }
    }

    fn no_files(p: &Path) -> io::Result<String> {
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} not provided", p.display()),
        ))
    }

    fn with_files(options: &str, files: &[(&str, &str)]) -> Result<Config, String> {
        let map: HashMap<PathBuf, String> = files
            .iter()
            .map(|(p, t)| (PathBuf::from(p), t.to_string()))
            .collect();
        let read = move |p: &Path| {
            map.get(p)
                .cloned()
                .ok_or_else(|| io::Error::from_raw_os_error(2))
        };
        parse_with(options, &read).map_err(|e| e.to_string())
    }

    fn file_sink(path: &str) -> SinkSpec {
        SinkSpec {
            format: SinkFormat::Jsonl,
            target: Output::File(PathBuf::from(path)),
        }
    }

    #[test]
    fn empty_options_give_every_default() {
        let c = ok("");
        assert_eq!(c, Config::default());
        assert_eq!(c.sinks, vec![file_sink("jfrctx-%p.jsonl")]);
        assert_eq!(c.period_ns, 20_000_000);
        assert_eq!(c.log_level, Level::Warn);
        assert_eq!(c.ring_capacity, 1024);
        assert_eq!(c.retention_ns, 5_000_000_000);
        assert_eq!(c.drain_interval_ns, 10_000_000);
        assert_eq!(c.stack_depth, 64);
        assert_eq!(c.sinks[0].to_string(), DEFAULT_SINK);
    }

    #[test]
    fn each_option_is_read() {
        let c = ok(
            "sink=jsonl:/tmp/s.jsonl,period=10ms,log=info,ring=4096,retention=10s,\
                    drain=5ms,stack_depth=128",
        );
        assert_eq!(c.sinks, vec![file_sink("/tmp/s.jsonl")]);
        assert_eq!(c.period_ns, 10_000_000);
        assert_eq!(c.log_level, Level::Info);
        assert_eq!(c.ring_capacity, 4096);
        assert_eq!(c.retention_ns, 10_000_000_000);
        assert_eq!(c.drain_interval_ns, 5_000_000);
        assert_eq!(c.stack_depth, 128);
    }

    #[test]
    fn spaces_and_empty_items_are_tolerated() {
        let c = ok(" period = 1ms , , log=debug,");
        assert_eq!(c.period_ns, 1_000_000);
        assert_eq!(c.log_level, Level::Debug);
    }

    #[test]
    fn sinks_repeat_and_stdout_is_dash() {
        let c = ok("sink=jsonl:-,sink=jsonl:/a/%p.jsonl,sink=jsonl");
        assert_eq!(
            c.sinks,
            vec![
                SinkSpec {
                    format: SinkFormat::Jsonl,
                    target: Output::Stdout
                },
                file_sink("/a/%p.jsonl"),
                file_sink("jfrctx-%p.jsonl"),
            ]
        );
        assert_eq!(c.sinks[0].to_string(), "jsonl:-");
        assert_eq!(c.sinks[1].resolve(42).to_string(), "jsonl:/a/42.jsonl");
    }

    #[test]
    fn pid_expansion() {
        let o = Output::File(PathBuf::from("/t/%p-x-%p.jsonl"));
        assert_eq!(o.resolve(7), Output::File(PathBuf::from("/t/7-x-7.jsonl")));
        assert_eq!(Output::Stdout.resolve(7), Output::Stdout);
        assert_eq!(expand_pid(Path::new("/plain"), 1), PathBuf::from("/plain"));
    }

    #[test]
    fn durations_take_every_unit() {
        for (text, ns) in [
            ("7ns", 7),
            ("7us", 7_000),
            ("7ms", 7_000_000),
            ("7s", 7_000_000_000),
            ("2m", 120_000_000_000),
        ] {
            assert_eq!(parse_duration("period", text), Ok(ns), "{text}");
        }
    }

    #[test]
    fn bad_durations() {
        for v in [
            "x",
            "10",
            "ms",
            "10h",
            "-5ms",
            "0ms",
            "1.5s",
            "99999999999999999999s",
            "9999999999m",
        ] {
            assert_eq!(
                err(&format!("period={v}")),
                format!("bad duration '{v}' for period (expected e.g. 20ms, 1s)")
            );
        }
    }

    #[test]
    fn unknown_option_lists_known_ones() {
        assert_eq!(
            err("perod=10ms"),
            "unknown option 'perod' (known: sink, period, log, config, ring, retention, drain, \
             stack_depth)"
        );
    }

    #[test]
    fn missing_equals() {
        assert_eq!(
            err("period"),
            "missing '=' in option 'period' (expected key=value)"
        );
    }

    #[test]
    fn sink_errors() {
        assert_eq!(err("sink="), "empty sink");
        assert_eq!(
            err("sink=foo:/x"),
            "unknown sink format 'foo' (known: jsonl)"
        );
        assert_eq!(
            err("sink=pprof"),
            "unknown sink format 'pprof' (known: jsonl)"
        );
        assert_eq!(
            err("sink=jsonl:"),
            "empty target in sink 'jsonl:' (expected e.g. jsonl:/tmp/s.jsonl or jsonl:-)"
        );
    }

    #[test]
    fn log_level_errors() {
        assert_eq!(
            err("log=verbose"),
            "bad log level 'verbose' (known: error, warn, info, debug)"
        );
    }

    #[test]
    fn range_errors() {
        assert_eq!(
            err("ring=1000"),
            "ring '1000' out of range (allowed: a power of two from 16 to 1048576)"
        );
        assert!(err("ring=8").starts_with("ring '8' out of range"));
        assert!(err("ring=2097152").starts_with("ring '2097152' out of range"));
        assert_eq!(ok("ring=16").ring_capacity, 16);
        assert_eq!(ok("ring=1048576").ring_capacity, 1 << 20);
        assert_eq!(err("ring=big"), "bad number 'big' for ring");
        assert_eq!(
            err("retention=2s"),
            "retention '2s' out of range (allowed: at least 3s)"
        );
        assert_eq!(ok("retention=3s").retention_ns, 3_000_000_000);
        assert_eq!(
            err("drain=999us"),
            "drain '999us' out of range (allowed: 1ms to 1s)"
        );
        assert!(err("drain=2s").starts_with("drain '2s' out of range"));
        assert_eq!(ok("drain=1s").drain_interval_ns, 1_000_000_000);
        assert_eq!(
            err("stack_depth=0"),
            "stack_depth '0' out of range (allowed: 1 to 2048)"
        );
        assert!(err("stack_depth=2049").starts_with("stack_depth '2049' out of range"));
        assert_eq!(err("stack_depth=-1"), "bad number '-1' for stack_depth");
    }

    #[test]
    fn duplicates_are_errors_except_sink() {
        assert_eq!(err("period=1ms,period=2ms"), "option 'period' given twice");
        assert_eq!(err("log=info,log=info"), "option 'log' given twice");
        assert_eq!(err("config=/a,config=/b"), "option 'config' given twice");
        assert_eq!(ok("sink=jsonl:/a,sink=jsonl:/b").sinks.len(), 2);
    }

    #[test]
    fn config_file_is_read_and_overridden() {
        let file = "# comment\n\nperiod = 5ms\nlog=debug\nsink=jsonl:/f.jsonl\nsink=jsonl:-\n";
        let c = with_files("config=/etc/j.conf", &[("/etc/j.conf", file)]).unwrap();
        assert_eq!(c.period_ns, 5_000_000);
        assert_eq!(c.log_level, Level::Debug);
        assert_eq!(c.sinks.len(), 2);
        assert_eq!(c.ring_capacity, 1024);

        let c = with_files("config=/etc/j.conf,period=7ms", &[("/etc/j.conf", file)]).unwrap();
        assert_eq!(c.period_ns, 7_000_000);
        assert_eq!(c.log_level, Level::Debug);
        // Command-line sinks replace the file's sinks.
        let c = with_files(
            "sink=jsonl:/cli.jsonl,config=/etc/j.conf",
            &[("/etc/j.conf", file)],
        )
        .unwrap();
        assert_eq!(c.sinks, vec![file_sink("/cli.jsonl")]);
        // A file line may hold a comma in a path.
        let c = with_files("config=/c", &[("/c", "sink=jsonl:/a,b.jsonl")]).unwrap();
        assert_eq!(c.sinks, vec![file_sink("/a,b.jsonl")]);
    }

    #[test]
    fn config_file_errors() {
        assert_eq!(
            with_files("config=/x", &[]).unwrap_err(),
            "config file /x: No such file or directory"
        );
        assert_eq!(
            with_files("config=/x", &[("/x", "period=1ms\n# c\nlog\n")]).unwrap_err(),
            "config file /x line 3: missing '='"
        );
        assert_eq!(
            with_files("config=/x", &[("/x", "config=/y\n")]).unwrap_err(),
            "config file /x line 1: config= is not allowed inside a config file"
        );
        assert_eq!(
            with_files("config=/x", &[("/x", "log=info\nlog=warn\n")]).unwrap_err(),
            "config file /x line 2: option 'log' given twice"
        );
        assert_eq!(
            with_files("config=/x", &[("/x", "period=fast\n")]).unwrap_err(),
            "config file /x line 1: bad duration 'fast' for period (expected e.g. 20ms, 1s)"
        );
        assert_eq!(
            with_files("config=/x", &[("/x", "colour=red\n")]).unwrap_err(),
            "config file /x line 1: unknown option 'colour' (known: sink, period, log, config, \
             ring, retention, drain, stack_depth)"
        );
        assert_eq!(err("config="), "empty path for config");
    }

    #[test]
    fn errors_are_one_line() {
        for e in [
            err("perod=1"),
            err("sink="),
            err("period=x"),
            with_files("config=/x", &[("/x", "a\n")]).unwrap_err(),
        ] {
            assert!(!e.contains('\n') && !e.starts_with("jfrctx"), "{e}");
        }
    }

    #[test]
    fn io_message_drops_os_error_suffix() {
        assert_eq!(
            io_message(&io::Error::from_raw_os_error(2)),
            "No such file or directory"
        );
        assert_eq!(io_message(&io::Error::other("plain")), "plain");
    }
}
