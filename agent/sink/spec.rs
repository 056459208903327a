//! What a sink is asked to be: its format, where it writes (`sink=FORMAT:TARGET`) and the
//! options every sink gets when it is opened. The option text is parsed in `options`.

use std::fmt;
use std::path::{Path, PathBuf};

use super::SinkOptions;

/// One `sink=FORMAT:TARGET` option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkSpec {
    pub format: SinkFormat,
    pub target: Output,
    /// The global sink options (filled in by [`parse_with`]).
    pub options: SinkOptions,
}

impl SinkSpec {
    /// A spec with default options.
    pub fn new(format: SinkFormat, target: Output) -> SinkSpec {
        SinkSpec {
            format,
            target,
            options: SinkOptions::default(),
        }
    }

    /// This spec with `%p` in its path replaced by `pid`.
    pub fn resolve(&self, pid: u32) -> SinkSpec {
        SinkSpec {
            format: self.format,
            target: self.target.resolve(pid),
            options: self.options.clone(),
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
    /// Gzipped pprof `profile.proto`, aggregated.
    Pprof,
    /// Folded stacks (`root;...;leaf COUNT`), aggregated.
    Collapsed,
    /// A directory of SVG flame graphs (inferno), aggregated.
    Svg,
    /// A JFR recording (chunks of events with the context in the constant pool).
    Jfr,
}

impl SinkFormat {
    pub const ALL: [SinkFormat; 5] = [
        SinkFormat::Jsonl,
        SinkFormat::Pprof,
        SinkFormat::Collapsed,
        SinkFormat::Svg,
        SinkFormat::Jfr,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SinkFormat::Jsonl => "jsonl",
            SinkFormat::Pprof => "pprof",
            SinkFormat::Collapsed => "collapsed",
            SinkFormat::Svg => "svg",
            SinkFormat::Jfr => "jfr",
        }
    }

    /// File name extension of the default target (the format's name).
    pub fn extension(self) -> &'static str {
        self.name()
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
