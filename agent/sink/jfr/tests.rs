use super::chunk::{chunk_size, HEADER_SIZE};
use super::*;
use crate::core::model::test_samples::sample;
use crate::sink::Sink;

/// A path in the temporary directory, unique to this process (each test removes its file).
fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("jfrctx-jfr-{}-{name}", std::process::id()))
}

fn clock() -> Clock {
    Clock {
        wall_ns: 1_700_000_000_000_000_000,
        mono_ns: 0,
    }
}

fn fixed_now() -> i64 {
    1_000
}

/// The sizes of the chunks of a file, checking each starts with a header whose size field
/// covers it exactly.
fn chunk_sizes(bytes: &[u8]) -> Vec<u64> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        let size = chunk_size(&bytes[at..]).expect("a chunk header");
        assert!(size as usize >= HEADER_SIZE);
        out.push(size);
        at += size as usize;
    }
    assert_eq!(at, bytes.len());
    out
}

#[test]
fn max_size_parses() {
    assert_eq!(parse_max_size("1m"), Ok(1 << 20));
    assert_eq!(parse_max_size("64MB"), Ok(64 << 20));
    assert_eq!(parse_max_size("2g"), Ok(2 << 30));
    assert_eq!(parse_max_size("2048k"), Ok(2 << 20));
    assert_eq!(parse_max_size("1048576"), Ok(1 << 20));
    assert!(parse_max_size("512k").is_err());
    assert!(parse_max_size("").is_err());
    assert!(parse_max_size("m").is_err());
    assert!(parse_max_size("12x").is_err());
    assert!(parse_max_size("99999999999999g").is_err());
}

#[test]
fn an_empty_run_is_still_one_chunk() {
    let path = tmp("empty.jfr");
    let mut s = JfrSink::with_clock(&path, &SinkOptions::default(), clock(), fixed_now).unwrap();
    s.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(chunk_sizes(&bytes).len(), 1);
    assert_eq!(bytes[67] & 2, 2, "the last chunk is final");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn chunks_end_at_the_events_bound_and_at_finish() {
    let path = tmp("bound.jfr");
    let mut s = JfrSink::with_clock(&path, &SinkOptions::default(), clock(), fixed_now).unwrap();
    s.aggregate_mut().chunk_max = 1000;
    let x = sample(Ok(&[("k", "v")]), "main", &[("a.B.c", 1), ("a.B.main", 2)]);
    for _ in 0..300 {
        s.record(&x).unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let complete = chunk_sizes(&before).len();
    assert!(complete >= 2, "{complete} chunks written while recording");
    s.finish().unwrap();
    let after = std::fs::read(&path).unwrap();
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "chunks are only appended"
    );
    assert_eq!(chunk_sizes(&after).len(), complete + 1);
    // Start ticks strictly increase from chunk to chunk (JMC keeps one chunk per start time),
    // even with a clock that does not move.
    let mut at = 0usize;
    let mut starts = Vec::new();
    for size in chunk_sizes(&after) {
        starts.push(i64::from_be_bytes(
            after[at + 48..at + 56].try_into().unwrap(),
        ));
        at += size as usize;
    }
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn the_max_size_drops_the_oldest_chunks() {
    let path = tmp("max.jfr");
    let o = SinkOptions {
        jfr_max_size: Some(MAX_SIZE_MIN),
        ..SinkOptions::default()
    };
    let mut s = JfrSink::with_clock(&path, &o, clock(), fixed_now).unwrap();
    let mut n = 0u64;
    while s.aggregate().dropped < 3 {
        let mut x = sample(Ok(&[("n", &n.to_string())]), "main", &[("a.B.c", n as i32)]);
        x.time_ns = n as i64;
        s.record(&x).unwrap();
        n += 1;
        assert!(n < 2_000_000, "never reached the bound");
    }
    s.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() as u64 <= MAX_SIZE_MIN, "{} bytes", bytes.len());
    assert_eq!(chunk_sizes(&bytes).len(), s.chunks());
    assert!(s.chunks() >= 2);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn an_interval_ends_a_chunk_only_when_it_holds_samples() {
    let path = tmp("interval.jfr");
    let o = SinkOptions {
        interval_ns: Some(1_000_000_000),
        ..SinkOptions::default()
    };
    let mut s = JfrSink::with_clock(&path, &o, clock(), fixed_now).unwrap();
    let start = crate::time::monotonic_ns();
    let x = sample(Ok(&[("k", "v")]), "main", &[("a.B.c", 1)]);
    s.record(&x).unwrap();
    // Three intervals over at once (a stall): one chunk, the other two have no samples.
    s.flush_at(start + 3_000_000_000).unwrap();
    assert_eq!(s.chunks(), 1);
    s.flush_at(start + 4_000_000_000).unwrap();
    assert_eq!(s.chunks(), 1, "an interval without samples ends no chunk");
    s.record(&x).unwrap();
    s.flush_at(start + 5_000_000_000).unwrap();
    assert_eq!(s.chunks(), 2);
    // Nothing since: finish adds no empty final chunk.
    s.finish().unwrap();
    assert_eq!(s.chunks(), 2);
    assert!(s.record(&x).is_err());
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(chunk_sizes(&bytes).len(), 2);
    let _ = std::fs::remove_file(&path);
}
