use super::*;
use crate::core::model::{ContextMap, Frame, ThreadInfo, UnknownReason};
use std::sync::Arc;

fn sample(tid: u64, context: Result<Arc<ContextMap>, UnknownReason>) -> ContextualSample {
    ContextualSample {
        event: Arc::from("jdk.ExecutionSample"),
        time_ns: 42,
        duration_ns: 0,
        thread: ThreadInfo {
            id: Some(tid),
            name: Arc::from("w"),
            is_virtual: true,
        },
        context,
        weight: 0,
        frames: vec![Frame {
            method: Arc::from("a.B.c"),
            line: 7,
        }],
        truncated: false,
    }
}

fn ctx() -> Result<Arc<ContextMap>, UnknownReason> {
    Ok(Arc::new(ContextMap::from_pairs(&[("k", "v")])))
}

fn leak() -> &'static Hub {
    Box::leak(Box::new(Hub::new()))
}

#[test]
fn encodes_the_documented_layout() {
    let mut e = Encoder::default();
    e.sample(&sample(5, ctx()));
    e.sample(&sample(6, Err(UnknownReason::NoThread)));
    let (b, n) = e.take();
    assert_eq!(n, 2);
    let mut expect = Vec::new();
    let string = |v: &mut Vec<u8>, id: u32, s: &str| {
        v.push(TAG_STRING);
        v.extend_from_slice(&id.to_le_bytes());
        v.extend_from_slice(&(s.len() as u32).to_le_bytes());
        v.extend_from_slice(s.as_bytes());
    };
    string(&mut expect, 0, "jdk.ExecutionSample");
    string(&mut expect, 1, "w");
    string(&mut expect, 2, "k");
    string(&mut expect, 3, "v");
    string(&mut expect, 4, "a.B.c");
    let head = |v: &mut Vec<u8>, tid: i64| {
        v.push(TAG_SAMPLE);
        v.extend_from_slice(&0u32.to_le_bytes());
        v.extend_from_slice(&42i64.to_le_bytes());
        v.extend_from_slice(&tid.to_le_bytes());
        v.extend_from_slice(&1u32.to_le_bytes());
        v.push(1);
    };
    head(&mut expect, 5);
    expect.push(0);
    expect.extend_from_slice(&1u16.to_le_bytes());
    expect.extend_from_slice(&2u32.to_le_bytes());
    expect.extend_from_slice(&3u32.to_le_bytes());
    expect.extend_from_slice(&1u16.to_le_bytes());
    expect.extend_from_slice(&4u32.to_le_bytes());
    expect.extend_from_slice(&7i32.to_le_bytes());
    string(&mut expect, 5, "no_thread");
    head(&mut expect, 6);
    expect.push(1);
    expect.extend_from_slice(&5u32.to_le_bytes());
    expect.extend_from_slice(&1u16.to_le_bytes());
    expect.extend_from_slice(&4u32.to_le_bytes());
    expect.extend_from_slice(&7i32.to_le_bytes());
    assert_eq!(b, expect);
    // The next batch is self-contained again.
    e.sample(&sample(5, ctx()));
    assert_eq!(&e.take().0[..5], &[TAG_STRING, 0, 0, 0, 0]);
}

#[test]
fn nothing_is_queued_while_nobody_listens() {
    let hub = leak();
    let mut sink = ListenerSink::new(hub);
    sink.record(&sample(1, ctx())).unwrap();
    sink.flush().unwrap();
    assert_eq!(hub.poll(Duration::ZERO), None);
    assert_eq!(hub.stats(), None);
}

#[test]
fn batches_per_flush_and_the_listener_thread_is_skipped() {
    let hub = leak();
    hub.set_listening(true, 9);
    let mut sink = ListenerSink::new(hub);
    sink.record(&sample(1, ctx())).unwrap();
    sink.record(&sample(9, ctx())).unwrap();
    sink.record(&sample(2, ctx())).unwrap();
    sink.flush().unwrap();
    sink.flush().unwrap();
    sink.record(&sample(3, ctx())).unwrap();
    sink.flush().unwrap();
    assert!(hub.poll(Duration::ZERO).is_some());
    assert!(hub.poll(Duration::ZERO).is_some());
    assert_eq!(hub.poll(Duration::from_millis(1)), None);
    let s = hub.stats().unwrap();
    assert_eq!((s.name.as_str(), s.records, s.errors), ("listener", 3, 0));
}

#[test]
fn stopping_drops_what_is_queued() {
    let hub = leak();
    hub.set_listening(true, -1);
    let mut sink = ListenerSink::new(hub);
    sink.record(&sample(1, ctx())).unwrap();
    sink.flush().unwrap();
    hub.set_listening(false, -1);
    assert_eq!(hub.poll(Duration::ZERO), None);
    sink.record(&sample(1, ctx())).unwrap();
    sink.flush().unwrap();
    let s = hub.stats().unwrap();
    // The queued sample is dropped; nothing is encoded while nobody listens.
    assert_eq!((s.records, s.errors), (0, 1));
}

#[test]
fn full_queue_drops_new_batches() {
    let hub = leak();
    hub.set_listening(true, -1);
    hub.push(vec![0; MAX_QUEUED_BYTES], 10);
    hub.push(vec![0; 1], 3);
    hub.push(vec![0; 1], 4);
    let s = hub.stats().unwrap();
    // 7 dropped, 10 still waiting.
    assert_eq!((s.records, s.errors), (0, 17));
    assert!(hub.warned_full.load(Ordering::Relaxed));
    assert_eq!(
        hub.poll(Duration::ZERO).map(|b| b.len()),
        Some(MAX_QUEUED_BYTES)
    );
    let s = hub.stats().unwrap();
    assert_eq!((s.records, s.errors), (10, 7));
}

#[test]
fn poll_wakes_on_push() {
    let hub = leak();
    hub.set_listening(true, -1);
    let t = std::thread::spawn(move || hub.poll(Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(20));
    hub.push(vec![1, 2], 1);
    assert_eq!(t.join().unwrap(), Some(vec![1, 2]));
}
