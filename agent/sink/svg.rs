//! SVG flame graph sink (`sink=svg:DIR`, drawn by the `inferno` crate). Each output is a
//! directory: `DIR` itself at exit, or with `interval` the subdirectories `DIR/0001`,
//! `DIR/0002`, ... (one per interval, see [`super::Rotation`]) plus a last one at exit (the sink
//! is [`Svg`] over the shared base [`super::base`]). As in the collapsed sink, each value kind
//! the enabled events can produce has its own graphs ([`crate::core::value::ValuePlan`]): with
//! a single kind (the default `events=cpu`) they are in the output directory itself, with
//! several in one subdirectory per kind named after it (`DIR/cpu`, `DIR/alloc`, `DIR/wait`,
//! `DIR/samples`; with `interval`, `DIR/0001/alloc`, ...). Each such directory holds:
//!
//! - `all.svg`: every sample, with a root frame per value of `svg_key`: `KEY=VALUE`, `KEY=-`
//!   for samples without the key, `[unknown: REASON]` when the context is unknown;
//! - one `KEY-VALUE.svg` per value of `svg_key` (after the cardinality policies), its samples
//!   only, under the same `KEY=VALUE` root frame. File names keep ASCII letters, digits, `.`,
//!   `_` and `-` and turn every other character into `_` (`endpoint=/orders` →
//!   `endpoint-_orders.svg`), a leading `.` becomes `_`, names are cut to 120 characters, and
//!   names that still collide get `.2`, `.3`, ... before `.svg` (values in sorted order);
//! - `index.txt`: one line per SVG, `FILE<TAB>VALUE<TAB>SAMPLES<TAB>CONTEXT` (`VALUE` in the
//!   kind's unit: nanoseconds, bytes or samples; `all` for `all.svg`, else `KEY=VALUE`; tabs and
//!   line breaks in values become spaces).
//!
//! Widths are the kind's values (the collapsed sink's numbers); titles say the total in words
//! (`jfrctx — KEY=VALUE — 12.5 ms of wait in 3 samples`, `... — 4096 bytes allocated in 2
//! samples`, `... — 7 samples`; `all` for `all.svg`) and tooltips use the same unit
//! (milliseconds for nanoseconds). Frames are method names as in the collapsed sink (with its
//! `[EVENT]` frame for events that are not CPU samples). Files from older runs in `DIR`
//! are left alone: `index.txt` lists the current ones. Without a cap, every distinct value
//! gives a file: bound high-cardinality keys with `cardinality=KEY:cap:N`.

use crate::time::monotonic_ns;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use inferno::flamegraph::color::{MultiPalette, Palette};
use inferno::flamegraph::{self, Options};

use super::base::{Aggregate, End, Rotating};
use super::collapsed::{push_root, push_stack, push_unknown};
use super::{Labeler, SinkOptions};
use crate::core::model::{ContextualSample, UnknownReason};
use crate::core::value::{ValueKind, ValuePlan};

/// Longest file name stem, in characters.
const MAX_STEM: usize = 120;

/// The part of `all.svg` a sample belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Group {
    Unknown(UnknownReason),
    Missing,
    Value(Arc<str>),
}

/// The svg sink: [`Svg`] over the shared base.
pub type SvgSink = Rotating<Svg>;

/// The stacks of the current interval, per value kind and `svg_key` value.
pub struct Svg {
    dir: PathBuf,
    key: String,
    labeler: Labeler,
    values: ValuePlan,
    /// One set of graphs each: the plan's kinds, then any other kind seen (which the enabled
    /// events cannot produce).
    kinds: Vec<ValueKind>,
    /// Per kind and group: folded stack (root first, no count) → its samples and value.
    groups: HashMap<ValueKind, HashMap<Group, HashMap<String, Tally>>>,
}

/// Samples and their summed value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Tally {
    samples: u64,
    value: u64,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.samples += other.samples;
        self.value = self.value.saturating_add(other.value);
    }
}

impl SvgSink {
    /// Creates `DIR` (and with `interval` its first subdirectory) now, so that an unusable
    /// directory fails at agent load.
    pub fn open(dir: &Path, options: &SinkOptions) -> io::Result<SvgSink> {
        let now_ns = monotonic_ns();
        Rotating::create(
            name(dir),
            Svg::new(dir, options),
            options.interval_ns,
            now_ns,
        )
    }

    /// A sink whose first interval starts at `now_ns`; nothing is touched until a write.
    pub fn new(dir: &Path, options: &SinkOptions, now_ns: i64) -> SvgSink {
        Rotating::over(
            name(dir),
            Svg::new(dir, options),
            options.interval_ns,
            now_ns,
        )
    }
}

fn name(dir: &Path) -> String {
    format!("svg:{}", dir.display())
}

impl Svg {
    fn new(dir: &Path, options: &SinkOptions) -> Svg {
        Svg {
            dir: dir.to_path_buf(),
            key: options.svg_key.clone(),
            labeler: Labeler::new(&options.cardinality),
            values: options.values.clone(),
            kinds: options.values.kinds().to_vec(),
            groups: HashMap::new(),
        }
    }

    /// Writes the graphs and index of one kind into `dir`.
    fn write_kind(
        &self,
        dir: &Path,
        kind: ValueKind,
        groups: BTreeMap<Group, HashMap<String, Tally>>,
    ) -> io::Result<()> {
        fs::create_dir_all(dir)?;
        let mut index = String::new();
        let mut all: Vec<String> = Vec::new();
        let mut total = Tally::default();
        for (group, stacks) in &groups {
            let mut root = String::new();
            match group {
                Group::Unknown(reason) => push_unknown(&mut root, *reason),
                Group::Missing => push_root(&mut root, &self.key, None),
                Group::Value(v) => push_root(&mut root, &self.key, Some(v)),
            }
            for (stack, t) in stacks {
                all.push(format!("{root};{stack} {}", t.value));
                total.add(*t);
            }
        }
        render(&dir.join("all.svg"), "all", kind, total, &all)?;
        index_line(&mut index, "all.svg", total, "all");
        let mut used = HashSet::new();
        for (group, stacks) in &groups {
            let Group::Value(value) = group else { continue };
            let file = file_name(&self.key, value, &mut used);
            let context = format!("{}={value}", self.key);
            // The context stays visible as the root frame, as in all.svg.
            let mut root = String::new();
            push_root(&mut root, &self.key, Some(value));
            let mut sum = Tally::default();
            let mut lines = Vec::with_capacity(stacks.len());
            for (stack, t) in stacks {
                lines.push(format!("{root};{stack} {}", t.value));
                sum.add(*t);
            }
            render(&dir.join(&file), &context, kind, sum, &lines)?;
            index_line(&mut index, &file, sum, &context);
        }
        fs::write(dir.join("index.txt"), index)
    }
}

/// The directory of `kind`'s graphs in the output directory `dir`: `dir` itself when `kind` is
/// the plan's only kind, else `dir/NAME` (`dir/alloc`).
pub fn kind_dir(dir: &Path, kind: ValueKind, plan: &ValuePlan) -> PathBuf {
    if plan.kinds() == [kind] {
        dir.to_path_buf()
    } else {
        dir.join(kind.name())
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

fn index_line(index: &mut String, file: &str, t: Tally, context: &str) {
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
    index.push_str(&format!("{file}\t{}\t{}\t{context}\n", t.value, t.samples));
}

/// The title of a flame graph of `kind` in `context` totalling `value` over `samples`.
pub fn title(context: &str, kind: ValueKind, value: u64, samples: u64) -> String {
    format!("jfrctx — {context} — {}", kind.describe(value, samples))
}

/// Draws `lines` (`folded VALUE`) into `path`; a graph without value is a small SVG that only
/// says so (inferno refuses empty input).
fn render(
    path: &Path,
    context: &str,
    kind: ValueKind,
    t: Tally,
    lines: &[String],
) -> io::Result<()> {
    let title = title(context, kind, t.value, t.samples);
    let mut out = BufWriter::new(File::create(path)?);
    if t.value == 0 {
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
    let (count_name, factor) = kind.display_unit();
    let mut options = Options::default();
    options.title = title;
    options.count_name = count_name.into();
    options.factor = factor;
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

impl Aggregate for Svg {
    /// Creates the first output directory of each kind with an empty `index.txt`.
    fn create(&mut self, n: Option<u32>) -> io::Result<()> {
        let first = output_dir(&self.dir, n);
        for kind in self.values.kinds() {
            let first = kind_dir(&first, *kind, &self.values);
            fs::create_dir_all(&first)?;
            File::create(first.join("index.txt"))?;
        }
        Ok(())
    }

    fn increment(&mut self, s: &ContextualSample) -> io::Result<()> {
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
        let (kind, value) = self.values.value(s);
        if !self.kinds.contains(&kind) {
            self.kinds.push(kind);
        }
        self.groups
            .entry(kind)
            .or_default()
            .entry(group)
            .or_default()
            .entry(stack)
            .or_default()
            .add(Tally {
                samples: 1,
                value: value.max(0) as u64,
            });
        Ok(())
    }

    fn write(&mut self, end: End) -> io::Result<()> {
        let mut groups = std::mem::take(&mut self.groups);
        let base = output_dir(&self.dir, end.n);
        for kind in &self.kinds {
            let dir = kind_dir(&base, *kind, &self.values);
            let kind_groups = groups.remove(kind).unwrap_or_default();
            self.write_kind(&dir, *kind, kind_groups.into_iter().collect())?;
        }
        Ok(())
    }

    fn replaced(&self) -> Vec<(String, u64)> {
        self.labeler.replaced()
    }
}

#[cfg(test)]
mod tests;
