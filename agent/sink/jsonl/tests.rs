use super::*;
use crate::core::model::{ContextMap, Frame, ThreadInfo, UnknownReason};
use serde_json::{json, Value};
use std::sync::Arc;

fn ctx(kv: &[(&str, &str)]) -> Arc<ContextMap> {
    Arc::new(ContextMap::from_pairs(kv))
}

fn sample() -> ContextualSample {
    ContextualSample {
        event: Arc::from("jdk.ExecutionSample"),
        time_ns: 123_456_789,
        duration_ns: 0,
        thread: ThreadInfo {
            id: Some(42),
            name: Arc::from("worker-1"),
            is_virtual: false,
        },
        context: Ok(ctx(&[("endpoint", "/orders")])),
        weight: 0,
        frames: vec![
            Frame {
                method: Arc::from("shop.Orders.handle"),
                line: 17,
            },
            Frame {
                method: Arc::from("java.lang.Thread.run"),
                line: -1,
            },
        ],
        truncated: false,
    }
}

fn lines(samples: &[ContextualSample]) -> Vec<String> {
    let mut sink = JsonlSink::new("jsonl:test".into(), Vec::new());
    for s in samples {
        sink.record(s).unwrap();
    }
    sink.finish().unwrap();
    let bytes = sink.into_inner().unwrap();
    let text = String::from_utf8(bytes).unwrap();
    assert!(text.ends_with('\n'));
    text.lines().map(str::to_string).collect()
}

fn one(s: ContextualSample) -> (String, Value) {
    let line = lines(&[s]).remove(0);
    let v: Value = serde_json::from_str(&line).unwrap();
    (line, v)
}

#[test]
fn schema_exact_for_a_plain_sample() {
    let (line, v) = one(sample());
    assert_eq!(
        line,
        r#"{"event":"jdk.ExecutionSample","time_ns":123456789,"thread":{"id":42,"name":"worker-1","virtual":false},"context":{"endpoint":"/orders"},"stack":[{"method":"shop.Orders.handle","line":17},{"method":"java.lang.Thread.run","line":-1}]}"#
    );
    assert_eq!(v["context"]["endpoint"], "/orders");
}

#[test]
fn empty_context_is_an_empty_object() {
    let mut s = sample();
    s.context = Ok(Arc::new(ContextMap::default()));
    let (_, v) = one(s);
    assert_eq!(v["context"], json!({}));
    assert!(v.get("unknown").is_none());
}

#[test]
fn unknown_context_is_null_with_reason() {
    for reason in UnknownReason::ALL {
        let mut s = sample();
        s.context = Err(reason);
        s.thread.id = None;
        let (_, v) = one(s);
        assert_eq!(v["context"], Value::Null);
        assert_eq!(v["unknown"], reason.as_str());
        assert_eq!(v["thread"]["id"], Value::Null);
    }
}

#[test]
fn optional_fields_appear_only_when_set() {
    let (_, v) = one(sample());
    for k in ["duration_ns", "weight", "truncated"] {
        assert!(v.get(k).is_none(), "{k}");
    }
    let mut s = sample();
    s.duration_ns = 5_000;
    s.weight = 4096;
    s.truncated = true;
    s.thread.is_virtual = true;
    s.frames.clear();
    let (_, v) = one(s);
    assert_eq!(v["duration_ns"], 5_000);
    assert_eq!(v["weight"], 4096);
    assert_eq!(v["truncated"], true);
    assert_eq!(v["thread"]["virtual"], true);
    assert_eq!(v["stack"], json!([]));
}

#[test]
fn strings_are_escaped() {
    let mut s = sample();
    let nasty = "a\"b\\c\nd\u{1}é😀";
    s.thread.name = Arc::from(nasty);
    s.context = Ok(ctx(&[("k\"ey", nasty), ("z", "")]));
    s.frames[0].method = Arc::from(nasty);
    let (line, v) = one(s);
    assert!(!line.contains('\n'));
    assert_eq!(v["thread"]["name"], nasty);
    assert_eq!(v["context"]["k\"ey"], nasty);
    assert_eq!(v["context"]["z"], "");
    assert_eq!(v["stack"][0]["method"], nasty);
}

#[test]
fn one_line_per_sample_and_no_record_after_finish() {
    let out = lines(&[sample(), sample(), sample()]);
    assert_eq!(out.len(), 3);
    let mut sink = JsonlSink::new("jsonl:x".into(), Vec::new());
    sink.finish().unwrap();
    assert!(sink.record(&sample()).is_err());
    assert_eq!(sink.name(), "jsonl:x");
}

#[test]
fn a_deleted_file_is_noticed_and_a_new_one_started() {
    let dir = std::env::temp_dir().join(format!("jfrctx-jsonl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("deleted.jsonl");
    let mut sink = JsonlSink::open(&Output::File(path.clone())).unwrap();
    sink.record(&sample()).unwrap();
    sink.record(&sample()).unwrap();
    sink.flush().unwrap();
    std::fs::remove_file(&path).unwrap();
    sink.flush().unwrap(); // nothing written since: nothing to notice yet
    assert!(!path.exists());
    sink.record(&sample()).unwrap();
    sink.flush().unwrap(); // noticed: this sample went with the old file too
    assert_eq!(sink.watch.as_ref().unwrap().deletions, 1);
    assert!(path.exists());
    sink.record(&sample()).unwrap();
    sink.finish().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn write_errors_surface() {
    struct Broken;
    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("broken pipe"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut sink = JsonlSink::new("jsonl:broken".into(), Broken);
    sink.record(&sample()).unwrap(); // buffered
    assert!(sink.flush().is_err());
}
