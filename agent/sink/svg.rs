//! SVG flame graph sink (`sink=svg:DIR`, drawn by the `inferno` crate). Each output is a
//! directory: `DIR` itself at exit, or with `interval` the subdirectories `DIR/0001`,
//! `DIR/0002`, ... (one per interval, see [`super::Rotation`]) plus a last one at exit. It holds:
//!
//! - `all.svg`: every sample, with a root frame per value of `svg_key`: `KEY=VALUE`, `KEY=-`
//!   for samples without the key, `[unknown: REASON]` when the context is unknown;
//! - one `KEY-VALUE.svg` per value of `svg_key` (after the cardinality policies), its samples
//!   only. File names keep ASCII letters, digits, `.`, `_` and `-` and turn every other
//!   character into `_` (`endpoint=/orders` → `endpoint-_orders.svg`), a leading `.` becomes
//!   `_`, names are cut to 120 characters, and names that still collide get `.2`, `.3`, ...
//!   before `.svg` (values in sorted order);
//! - `index.txt`: one line per SVG, `FILE<TAB>SAMPLES<TAB>CONTEXT` (`all` for `all.svg`, else
//!   `KEY=VALUE`; tabs and line breaks in values become spaces).
//!
//! Titles read `jfrctx — KEY=VALUE — N samples` (`all` for `all.svg`); widths are sample
//! counts. Frames are method names as in the collapsed sink (with its `[EVENT]` frame for events
//! that are not CPU samples). Files from older runs in `DIR`
//! are left alone: `index.txt` lists the current ones. Without a cap, every distinct value
//! gives a file: bound high-cardinality keys with `cardinality=KEY:cap:N`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use inferno::flamegraph::color::{MultiPalette, Palette};
use inferno::flamegraph::{self, Options};

use super::collapsed::{push_root, push_stack, push_unknown};
use super::{now_ns, Labeler, Rotation, Sink, SinkOptions};
use crate::model::{ContextualSample, UnknownReason};

/// Longest file name stem, in characters.
const MAX_STEM: usize = 120;

/// The part of `all.svg` a sample belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Group {
    Unknown(UnknownReason),
    Missing,
    Value(Arc<str>),
}

pub struct SvgSink {
    name: String,
    dir: PathBuf,
    key: String,
    labeler: Labeler,
    rotation: Rotation,
    /// Per group: folded stack (root first, no count) → samples.
    groups: HashMap<Group, HashMap<String, u64>>,
    finished: bool,
}

impl SvgSink {
    /// Creates `DIR` (and with `interval` its first subdirectory) now, so that an unusable
    /// directory fails at agent load.
    pub fn open(dir: &Path, options: &SinkOptions) -> io::Result<SvgSink> {
        let sink = SvgSink::new(dir, options, now_ns());
        let first = output_dir(dir, sink.rotation.peek());
        fs::create_dir_all(&first)?;
        File::create(first.join("index.txt"))?;
        Ok(sink)
    }

    /// A sink whose first interval starts at `now_ns`; nothing is touched until a write.
    pub fn new(dir: &Path, options: &SinkOptions, now_ns: i64) -> SvgSink {
        SvgSink {
            name: format!("svg:{}", dir.display()),
            dir: dir.to_path_buf(),
            key: options.svg_key.clone(),
            labeler: Labeler::new(&options.cardinality),
            rotation: Rotation::new(options.interval_ns, now_ns),
            groups: HashMap::new(),
            finished: false,
        }
    }

    /// Writes an output if the current interval is over at `now_ns`.
    pub fn flush_at(&mut self, now_ns: i64) -> io::Result<()> {
        while self.rotation.due(now_ns) {
            self.write()?;
        }
        Ok(())
    }

    fn write(&mut self) -> io::Result<()> {
        let groups: BTreeMap<Group, HashMap<String, u64>> = self.groups.drain().collect();
        let dir = output_dir(&self.dir, self.rotation.take());
        fs::create_dir_all(&dir)?;
        let mut index = String::new();
        let mut all: Vec<String> = Vec::new();
        for (group, stacks) in &groups {
            let mut root = String::new();
            match group {
                Group::Unknown(reason) => push_unknown(&mut root, *reason),
                Group::Missing => push_root(&mut root, &self.key, None),
                Group::Value(v) => push_root(&mut root, &self.key, Some(v)),
            }
            all.extend(stacks.iter().map(|(s, n)| format!("{root};{s} {n}")));
        }
        let total: u64 = groups.values().flat_map(|m| m.values()).sum();
        render(&dir.join("all.svg"), "all", total, &all)?;
        index_line(&mut index, "all.svg", total, "all");
        let mut used = HashSet::new();
        for (group, stacks) in &groups {
            let Group::Value(value) = group else { continue };
            let file = file_name(&self.key, value, &mut used);
            let context = format!("{}={value}", self.key);
            let lines: Vec<String> = stacks.iter().map(|(s, n)| format!("{s} {n}")).collect();
            let count = stacks.values().sum();
            render(&dir.join(&file), &context, count, &lines)?;
            index_line(&mut index, &file, count, &context);
        }
        fs::write(dir.join("index.txt"), index)
    }
}

/// The directory of output `n`: `dir/NNNN` when rotating, else `dir`.
pub fn output_dir(dir: &Path, n: Option<u32>) -> PathBuf {
    match n {
        Some(n) => dir.join(format!("{n:04}")),
        None => dir.to_path_buf(),
    }
}

/// The file name for `key=value`, unique among `used` (see the module docs for the rule).
pub fn file_name(key: &str, value: &str, used: &mut HashSet<String>) -> String {
    let mut stem: String = format!("{key}-{value}")
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '_',
        })
        .take(MAX_STEM)
        .collect();
    if stem.starts_with('.') {
        stem.replace_range(..1, "_");
    }
    let mut name = format!("{stem}.svg");
    let mut k = 2;
    while !used.insert(name.clone()) {
        name = format!("{stem}.{k}.svg");
        k += 1;
    }
    name
}

fn index_line(index: &mut String, file: &str, count: u64, context: &str) {
    let context: String = context
        .chars()
        .map(|c| {
            if matches!(c, '\t' | '\n' | '\r') {
                ' '
            } else {
                c
            }
        })
        .collect();
    index.push_str(&format!("{file}\t{count}\t{context}\n"));
}

/// The title of a flame graph of `count` samples in `context`.
pub fn title(context: &str, count: u64) -> String {
    format!("jfrctx — {context} — {count} samples")
}

/// Draws `lines` (`folded COUNT`) into `path`; a graph without samples is a small SVG that
/// only says so (inferno refuses empty input).
fn render(path: &Path, context: &str, count: u64, lines: &[String]) -> io::Result<()> {
    let title = title(context, count);
    let mut out = BufWriter::new(File::create(path)?);
    if count == 0 {
        write!(
            out,
            "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg version=\"1.1\" width=\"1200\" \
             height=\"60\" xmlns=\"http://www.w3.org/2000/svg\"><title>{t}</title>\
             <text x=\"600\" y=\"34\" text-anchor=\"middle\" font-family=\"Verdana\" \
             font-size=\"17\">{t}</text></svg>\n",
            t = escape(&title)
        )?;
        return out.flush();
    }
    let mut options = Options::default();
    options.title = title;
    options.count_name = "samples".into();
    options.colors = Palette::Multi(MultiPalette::Java);
    options.hash = true;
    flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut out)?;
    out.flush()
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

impl Sink for SvgSink {
    fn name(&self) -> &str {
        &self.name
    }

    fn record(&mut self, s: &ContextualSample) -> io::Result<()> {
        if self.finished {
            return Err(io::Error::other("record after finish"));
        }
        let group = match &s.context {
            Err(reason) => Group::Unknown(*reason),
            Ok(map) => {
                let labels = self.labeler.apply(map);
                match labels.into_iter().find(|(k, _)| **k == *self.key) {
                    Some((_, v)) => Group::Value(v),
                    None => Group::Missing,
                }
            }
        };
        let mut stack = String::new();
        push_stack(&mut stack, s);
        *self
            .groups
            .entry(group)
            .or_default()
            .entry(stack)
            .or_insert(0) += 1;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_at(now_ns())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.finished = true;
        self.write()
    }

    fn replaced(&self) -> Vec<(String, u64)> {
        self.labeler.replaced()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Policy;

    fn sample(ctx: Result<&[(&str, &str)], UnknownReason>, stack: &[&str]) -> ContextualSample {
        let frames: Vec<(&str, i32)> = stack.iter().map(|m| (*m, 1)).collect();
        crate::model::test_samples::sample(ctx, "main", &frames)
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("jfrctx-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn file_names_are_sanitized_and_unique() {
        let mut used = HashSet::new();
        let mut f = |k: &str, v: &str| file_name(k, v, &mut used);
        assert_eq!(f("endpoint", "/orders"), "endpoint-_orders.svg");
        assert_eq!(f("endpoint", "_orders"), "endpoint-_orders.2.svg");
        assert_eq!(f("endpoint", "?orders"), "endpoint-_orders.3.svg");
        assert_eq!(f("gt", "alpha"), "gt-alpha.svg");
        assert_eq!(f("t", "Ünï code/../x y"), "t-_n__code_.._x_y.svg");
        assert_eq!(f(".k", "v"), "_k-v.svg");
        let long = f("k", &"x".repeat(500));
        assert_eq!(long.len(), MAX_STEM + ".svg".len());
    }

    #[test]
    fn writes_all_per_value_svgs_and_an_index() {
        let dir = temp_dir("svg-write");
        let options = SinkOptions {
            svg_key: "gt".into(),
            ..SinkOptions::default()
        };
        let mut sink = SvgSink::open(&dir, &options).unwrap();
        let samples = [
            sample(Ok(&[("gt", "alpha")]), &["leaf", "main"]),
            sample(Ok(&[("gt", "alpha")]), &["leaf", "main"]),
            sample(Ok(&[("gt", "a/b"), ("x", "1")]), &["w.B.elsewhere", "main"]),
            sample(Ok(&[]), &["idle"]),
            sample(Err(UnknownReason::NoThread), &[]),
        ];
        for s in &samples {
            sink.record(s).unwrap();
        }
        sink.flush().unwrap();
        sink.finish().unwrap();
        assert!(sink.record(&samples[0]).is_err());
        let index = fs::read_to_string(dir.join("index.txt")).unwrap();
        assert_eq!(
            index,
            "all.svg\t5\tall\ngt-a_b.svg\t1\tgt=a/b\ngt-alpha.svg\t2\tgt=alpha\n"
        );
        let all = fs::read_to_string(dir.join("all.svg")).unwrap();
        assert!(all.starts_with("<?xml"), "{}", &all[..100]);
        assert!(all.contains("jfrctx — all — 5 samples"));
        for frame in ["gt=alpha", "gt=a/b", "gt=-", "[unknown: no_thread]", "idle"] {
            assert!(all.contains(frame), "{frame} missing in all.svg");
        }
        let alpha = fs::read_to_string(dir.join("gt-alpha.svg")).unwrap();
        assert!(alpha.contains("jfrctx — gt=alpha — 2 samples"));
        assert!(alpha.contains("leaf") && !alpha.contains("w.B.elsewhere"));
        assert!(alpha.trim_end().ends_with("</svg>"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn empty_outputs_and_rotation_directories() {
        let dir = temp_dir("svg-rotation");
        let options = SinkOptions {
            interval_ns: Some(100),
            cardinality: vec![("endpoint".into(), Policy::Cap(1))],
            ..SinkOptions::default()
        };
        let mut sink = SvgSink::new(&dir, &options, 0);
        sink.record(&sample(Ok(&[("endpoint", "/a")]), &["m"]))
            .unwrap();
        sink.record(&sample(Ok(&[("endpoint", "/b")]), &["m"]))
            .unwrap();
        sink.flush_at(100).unwrap();
        sink.flush_at(250).unwrap();
        sink.finish().unwrap();
        let index = |n: &str| fs::read_to_string(dir.join(n).join("index.txt")).unwrap();
        assert_eq!(
            index("0001"),
            "all.svg\t2\tall\nendpoint-_a.svg\t1\tendpoint=/a\n\
             endpoint-other.svg\t1\tendpoint=other\n"
        );
        assert_eq!(index("0002"), "all.svg\t0\tall\n");
        assert_eq!(index("0003"), "all.svg\t0\tall\n");
        let empty = fs::read_to_string(dir.join("0002/all.svg")).unwrap();
        assert!(empty.starts_with("<?xml") && empty.contains("jfrctx — all — 0 samples"));
        assert_eq!(sink.replaced(), vec![("endpoint".to_string(), 1)]);
        assert!(!dir.join("0004").exists());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn titles_are_escaped_in_the_empty_placeholder() {
        let dir = temp_dir("svg-escape");
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.svg");
        render(&path, "k=<a&b>", 0, &[]).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains("k=&lt;a&amp;b&gt;") && !text.contains("<a&b>"));
        fs::remove_dir_all(&dir).unwrap();
    }
}
