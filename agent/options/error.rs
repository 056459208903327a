//! A configuration problem. `Display` is one line naming it, without the `jfrctx:` prefix.

use std::path::PathBuf;

use super::table::known_keys;
use super::SinkFormat;

fn known_formats() -> String {
    let known: Vec<&str> = SinkFormat::ALL.iter().map(|f| f.name()).collect();
    known.join(", ")
}

fn missing_equals(item: Option<&str>) -> String {
    match item {
        Some(item) => format!("missing '=' in option '{item}' (expected key=value)"),
        None => "missing '='".into(),
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("unknown option '{0}' (known: {known})", known = known_keys())]
    UnknownOption(String),
    /// A command-line item without `=` (`None`: a config file line, located by `InFile`).
    #[error("{}", missing_equals(.0.as_deref()))]
    MissingEquals(Option<String>),
    #[error("bad duration '{value}' for {key} (expected e.g. 20ms, 1s)")]
    BadDuration { key: &'static str, value: String },
    #[error("bad number '{value}' for {key}")]
    BadNumber { key: &'static str, value: String },
    #[error("{key} '{value}' out of range (allowed: {allowed})")]
    OutOfRange {
        key: &'static str,
        value: String,
        allowed: &'static str,
    },
    #[error("bad log level '{0}' (known: error, warn, info, debug)")]
    BadLogLevel(String),
    #[error("empty sink")]
    EmptySink,
    #[error("empty target in sink '{0}' (expected e.g. jsonl:/tmp/s.jsonl or jsonl:-)")]
    EmptySinkTarget(String),
    #[error("unknown sink format '{0}' (known: {known})", known = known_formats())]
    UnknownSinkFormat(String),
    /// A value that does not parse; `why` says what is wrong.
    #[error("bad {key} '{value}': {why}")]
    BadValue {
        key: &'static str,
        value: String,
        why: String,
    },
    #[error("option '{0}' given twice")]
    Duplicate(&'static str),
    #[error("config= is not allowed inside a config file")]
    NestedConfig,
    #[error("empty path for config")]
    EmptyConfigPath,
    #[error("config file {}: {message}", path.display())]
    ReadFile { path: PathBuf, message: String },
    #[error("config file {} line {line}: {error}", path.display())]
    InFile {
        path: PathBuf,
        line: usize,
        error: Box<ConfigError>,
    },
}
