//! `jfrctx-report FILE.jsonl [--key endpoint] [--event jdk.ExecutionSample]`
//!
//! Reads the JSON lines written by the jsonl sink and prints how many samples of one event type
//! fall on each value of one context key, with special rows for samples without context,
//! with a context lacking the key, and with an unknown context. Bad input: one line naming the
//! file and line on stderr, exit status 2.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::process::ExitCode;

use serde_json::Value;

const USAGE: &str =
    "usage: jfrctx-report FILE.jsonl [--key endpoint] [--event jdk.ExecutionSample]";

struct Args {
    file: String,
    key: String,
    event: String,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut file = None;
    let mut key = "endpoint".to_string();
    let mut event = "jdk.ExecutionSample".to_string();
    let mut args = args.peekable();
    while let Some(a) = args.next() {
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        match name.as_str() {
            "--key" | "--event" => {
                let v = inline
                    .or_else(|| args.next())
                    .ok_or_else(|| format!("{name} needs a value"))?;
                if name == "--key" {
                    key = v;
                } else {
                    event = v;
                }
            }
            "-h" | "--help" => return Err(String::new()),
            s if s.starts_with("--") => return Err(format!("unknown flag {s}")),
            _ if file.is_some() => return Err(format!("unexpected argument {a}")),
            _ => file = Some(a),
        }
    }
    let file = file.ok_or_else(|| "missing FILE".to_string())?;
    Ok(Args { file, key, event })
}

/// What a sample's context says about the key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Bucket {
    Value(String),
    /// A context without the key.
    NoKey,
    /// No context installed.
    NoContext,
    /// Context undecidable, with the reason.
    Unknown(String),
}

/// Samples per bucket for one event type and key.
#[derive(Debug, Default)]
struct Table {
    counts: HashMap<Bucket, u64>,
    total: u64,
}

/// Reads every line; returns `(line number, problem)` for the first bad one.
fn aggregate<I>(lines: I, key: &str, event: &str) -> Result<Table, (usize, String)>
where
    I: IntoIterator<Item = io::Result<String>>,
{
    let mut table = Table::default();
    for (i, line) in lines.into_iter().enumerate() {
        let n = i + 1;
        let line = line.map_err(|e| (n, e.to_string()))?;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(&line).map_err(|e| (n, format!("bad JSON: {e}")))?;
        let ev = v
            .get("event")
            .and_then(Value::as_str)
            .ok_or_else(|| (n, "no \"event\" string".to_string()))?;
        if ev != event {
            continue;
        }
        let bucket = match v.get("context") {
            Some(Value::Object(map)) if map.is_empty() => Bucket::NoContext,
            Some(Value::Object(map)) => match map.get(key) {
                Some(Value::String(s)) => Bucket::Value(s.clone()),
                Some(other) => Bucket::Value(other.to_string()),
                None => Bucket::NoKey,
            },
            Some(Value::Null) => Bucket::Unknown(
                v.get("unknown")
                    .and_then(Value::as_str)
                    .unwrap_or("unspecified")
                    .to_string(),
            ),
            _ => return Err((n, "\"context\" is neither an object nor null".to_string())),
        };
        *table.counts.entry(bucket).or_default() += 1;
        table.total += 1;
    }
    Ok(table)
}

/// Rows `(label, samples)`: key values by count descending (then by value), then
/// `(no <key>)`, `(no context)` and `(unknown: reason)` rows.
fn rows(table: &Table, key: &str) -> Vec<(String, u64)> {
    let mut values: Vec<(&Bucket, u64)> = table.counts.iter().map(|(b, &n)| (b, n)).collect();
    values.sort_by(|a, b| {
        let special = |b: &Bucket| !matches!(b, Bucket::Value(_));
        special(a.0).cmp(&special(b.0)).then(if special(a.0) {
            a.0.cmp(b.0)
        } else {
            b.1.cmp(&a.1).then(a.0.cmp(b.0))
        })
    });
    values
        .into_iter()
        .map(|(b, n)| {
            let label = match b {
                Bucket::Value(v) => v.clone(),
                Bucket::NoKey => format!("(no {key})"),
                Bucket::NoContext => "(no context)".to_string(),
                Bucket::Unknown(r) => format!("(unknown: {r})"),
            };
            (label, n)
        })
        .collect()
}

fn render(table: &Table, key: &str) -> String {
    let rows = rows(table, key);
    let width = rows
        .iter()
        .map(|(l, _)| l.chars().count())
        .chain([key.chars().count(), "total".len()])
        .max()
        .unwrap_or(5);
    let share = |n: u64| {
        if table.total == 0 {
            0.0
        } else {
            n as f64 * 100.0 / table.total as f64
        }
    };
    let mut out = format!("{key:<width$}  {:>10}  {:>7}\n", "samples", "share");
    for (label, n) in &rows {
        out += &format!("{label:<width$}  {n:>10}  {:>6.1}%\n", share(*n));
    }
    out += &format!(
        "{:<width$}  {:>10}  {:>6.1}%\n",
        "total",
        table.total,
        share(table.total)
    );
    out
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(msg) if msg.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(msg) => {
            eprintln!("jfrctx-report: {msg} ({USAGE})");
            return ExitCode::from(2);
        }
    };
    let file = match File::open(&args.file) {
        Ok(f) => f,
        Err(e) => {
            eprintln!(
                "jfrctx-report: {}: {}",
                args.file,
                jfrctx::log::io_message(&e)
            );
            return ExitCode::from(2);
        }
    };
    let table = match aggregate(BufReader::new(file).lines(), &args.key, &args.event) {
        Ok(t) => t,
        Err((line, msg)) => {
            eprintln!("jfrctx-report: {} line {line}: {msg}", args.file);
            return ExitCode::from(2);
        }
    };
    let mut stdout = io::stdout().lock();
    if table.total == 0 {
        let _ = writeln!(stdout, "no {} samples in {}", args.event, args.file);
        return ExitCode::SUCCESS;
    }
    let _ = stdout.write_all(render(&table, &args.key).as_bytes());
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[&str]) -> Vec<io::Result<String>> {
        text.iter().map(|l| Ok(l.to_string())).collect()
    }

    fn sample(context: &str) -> String {
        format!(
            r#"{{"event":"jdk.ExecutionSample","time_ns":1,"thread":{{"id":1,"name":"m","virtual":false}},"context":{context},"stack":[]}}"#
        )
    }

    fn table(text: &[&str]) -> Vec<(String, u64)> {
        let t = aggregate(lines(text), "endpoint", "jdk.ExecutionSample").unwrap();
        assert_eq!(t.total, t.counts.values().sum::<u64>());
        rows(&t, "endpoint")
    }

    #[test]
    fn counts_per_value_sorted_desc_then_special_rows() {
        let a = sample(r#"{"endpoint":"/a"}"#);
        let b = sample(r#"{"endpoint":"/b","user":"u"}"#);
        let none = sample("{}");
        let nokey = sample(r#"{"user":"u"}"#);
        let unknown = sample(r#"null,"unknown":"no_thread""#);
        let other_event = a.replace("jdk.ExecutionSample", "jdk.ThreadPark");
        let got = table(&[
            &a,
            &b,
            &b,
            &none,
            "",
            &nokey,
            &unknown,
            &unknown,
            &b,
            &other_event,
        ]);
        assert_eq!(
            got,
            vec![
                ("/b".to_string(), 3),
                ("/a".to_string(), 1),
                ("(no endpoint)".to_string(), 1),
                ("(no context)".to_string(), 1),
                ("(unknown: no_thread)".to_string(), 2),
            ]
        );
    }

    #[test]
    fn ties_sort_by_value_and_render_has_a_total() {
        let a = sample(r#"{"endpoint":"/a"}"#);
        let b = sample(r#"{"endpoint":"/b"}"#);
        let t = aggregate(lines(&[&b, &a, &b, &a]), "endpoint", "jdk.ExecutionSample").unwrap();
        let out = render(&t, "endpoint");
        assert_eq!(
            out,
            "endpoint     samples    share\n\
             /a                 2    50.0%\n\
             /b                 2    50.0%\n\
             total              4   100.0%\n"
        );
    }

    #[test]
    fn another_key_and_event() {
        let s = r#"{"event":"jdk.ObjectAllocationSample","context":{"tenant":"t1"},"weight":8}"#;
        let t = aggregate(lines(&[s, s]), "tenant", "jdk.ObjectAllocationSample").unwrap();
        assert_eq!(rows(&t, "tenant"), vec![("t1".to_string(), 2)]);
    }

    #[test]
    fn bad_input_names_the_line() {
        let good = sample("{}");
        let err =
            |text: &[&str]| aggregate(lines(text), "endpoint", "jdk.ExecutionSample").unwrap_err();
        let (n, msg) = err(&[&good, "{not json"]);
        assert_eq!(n, 2);
        assert!(msg.starts_with("bad JSON"), "{msg}");
        assert_eq!(err(&[&good, &good, "{}"]).0, 3);
        assert_eq!(err(&["[1]"]).1, "no \"event\" string");
        assert_eq!(
            err(&[r#"{"event":"jdk.ExecutionSample","context":3}"#]).1,
            "\"context\" is neither an object nor null"
        );
        let io_err: Vec<io::Result<String>> = vec![Err(io::Error::other("boom"))];
        assert_eq!(
            aggregate(io_err, "endpoint", "x").unwrap_err(),
            (1, "boom".to_string())
        );
    }

    #[test]
    fn args() {
        let p = |v: &[&str]| parse_args(v.iter().map(|s| s.to_string()));
        let a = p(&["f.jsonl"]).unwrap();
        assert_eq!((a.file.as_str(), a.key.as_str()), ("f.jsonl", "endpoint"));
        assert_eq!(a.event, "jdk.ExecutionSample");
        let a = p(&["--key", "user", "f", "--event=jdk.X"]).unwrap();
        assert_eq!(
            (a.file.as_str(), a.key.as_str(), a.event.as_str()),
            ("f", "user", "jdk.X")
        );
        assert_eq!(p(&[]).err().unwrap(), "missing FILE");
        assert_eq!(p(&["f", "--key"]).err().unwrap(), "--key needs a value");
        assert_eq!(p(&["f", "--bogus"]).err().unwrap(), "unknown flag --bogus");
        assert_eq!(p(&["f", "g"]).err().unwrap(), "unexpected argument g");
    }
}
