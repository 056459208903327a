//! Unit tests of `batch.rs`.

use super::*;

fn frame(method: &str, line: i32) -> Frame {
    Frame {
        method: Arc::from(method),
        line,
    }
}

fn sample(tid: Option<u64>, ticks: i64) -> RawSample {
    RawSample {
        event: Arc::from("jdk.ExecutionSample"),
        start_ticks: ticks,
        duration_ticks: 0,
        thread: ThreadInfo {
            id: tid,
            name: Arc::from("main"),
            is_virtual: false,
        },
        weight: 0,
        frames: vec![frame("a.B.c", 10), frame("a.B.main", -1)],
        truncated: false,
        carrier: false,
    }
}

fn decode_all(d: &mut Decoder, bytes: &[u8]) -> (Vec<Record>, Result<(), BatchError>) {
    let mut out = Vec::new();
    let r = d.decode(bytes, &mut out);
    (out, r)
}

#[test]
fn round_trip_every_record() {
    let mut e = Encoder::new();
    let mut s1 = sample(Some(1), 100);
    s1.thread.is_virtual = true;
    s1.truncated = true;
    s1.carrier = true;
    s1.weight = 4096;
    s1.duration_ticks = 55;
    s1.event = Arc::from("jdk.ObjectAllocationSample");
    let s2 = sample(None, -5);
    let mut s3 = sample(Some(u64::from(u32::MAX) + 9), 7);
    s3.frames.clear();
    s3.thread.name = Arc::from("wörker \"x\"");
    let b = Bracket {
        ticks: 1,
        before_ns: -2,
        after_ns: i64::MAX,
    };
    e.sample(&s1);
    e.calibration(b);
    e.sample(&s2);
    e.sample(&s3);
    e.stream_end("");
    e.stream_end("boom");
    let (out, r) = decode_all(&mut Decoder::new(), e.bytes());
    r.unwrap();
    assert_eq!(
        out,
        vec![
            Record::Sample(s1),
            Record::Calibration(b),
            Record::Sample(s2),
            Record::Sample(s3),
            Record::StreamEnd(String::new()),
            Record::StreamEnd("boom".into()),
        ]
    );
}

#[test]
fn strings_are_interned_once_and_kept_across_batches() {
    let mut e = Encoder::new();
    let mut d = Decoder::new();
    e.sample(&sample(Some(1), 1));
    let first = e.take();
    e.sample(&sample(Some(2), 2));
    let second = e.take();
    // The second batch has no string records: it is one sample record.
    assert_eq!(second[0], TAG_SAMPLE);
    assert_eq!(second.len(), 1 + 4 + 8 * 3 + 4 + 1 + 8 + 2 + 2 * 8);
    let (out1, r1) = decode_all(&mut d, &first);
    r1.unwrap();
    let (out2, r2) = decode_all(&mut d, &second);
    r2.unwrap();
    assert_eq!(d.strings(), 4);
    assert_eq!(out1, vec![Record::Sample(sample(Some(1), 1))]);
    assert_eq!(out2, vec![Record::Sample(sample(Some(2), 2))]);
    // A fresh decoder has not seen the strings.
    let (_, r) = decode_all(&mut Decoder::new(), &second);
    assert_eq!(
        r.unwrap_err(),
        BatchError::StringIdOutOfRange {
            offset: 1,
            id: 0,
            known: 0
        }
    );
}

#[test]
fn exact_layout_of_a_string_and_calibration() {
    let mut e = Encoder::new();
    assert_eq!(e.string("ab"), 0);
    assert_eq!(e.string("ab"), 0);
    e.calibration(Bracket {
        ticks: 0x0102,
        before_ns: 3,
        after_ns: -1,
    });
    let mut want = vec![
        1, 0, 0, 0, 0, 2, 0, 0, 0, b'a', b'b', 3, 2, 1, 0, 0, 0, 0, 0, 0,
    ];
    want.extend_from_slice(&[3, 0, 0, 0, 0, 0, 0, 0]);
    want.extend_from_slice(&[0xff; 8]);
    assert_eq!(e.bytes(), &want[..]);
}

#[test]
fn negative_thread_ids_mean_none() {
    let mut e = Encoder::new();
    e.sample(&sample(None, 1));
    let bytes = e.take();
    let (out, r) = decode_all(&mut Decoder::new(), &bytes);
    r.unwrap();
    match &out[0] {
        Record::Sample(s) => assert_eq!(s.thread.id, None),
        other => panic!("{other:?}"),
    }
}

#[test]
fn truncation_anywhere_is_an_error_and_keeps_earlier_records() {
    let mut e = Encoder::new();
    e.sample(&sample(Some(3), 3));
    e.calibration(Bracket {
        ticks: 1,
        before_ns: 1,
        after_ns: 2,
    });
    // Strings are interned now: the rest is one sample record, then one calibration.
    let prefix = e.bytes().len();
    e.sample(&sample(Some(4), 4));
    let middle = e.bytes().len();
    e.calibration(Bracket {
        ticks: 2,
        before_ns: 1,
        after_ns: 2,
    });
    let full = e.take();
    for cut in (prefix + 1..middle).chain(middle + 1..full.len()) {
        let (out, r) = decode_all(&mut Decoder::new(), &full[..cut]);
        let err = r.unwrap_err();
        let (want_at, want_kind, want_len) = if cut < middle {
            (prefix, "sample", 2)
        } else {
            (middle, "calibration", 3)
        };
        assert_eq!(
            err,
            BatchError::Truncated {
                offset: want_at,
                record: want_kind
            },
            "cut {cut}"
        );
        assert_eq!(out.len(), want_len, "cut {cut}");
    }
    let (_, r) = decode_all(&mut Decoder::new(), &full[..middle + 3]);
    assert_eq!(
        r.unwrap_err().to_string(),
        format!("batch truncated in calibration record at offset {middle}")
    );
    let (_, r) = decode_all(&mut Decoder::new(), &[TAG_STRING, 0, 0]);
    assert_eq!(
        r.unwrap_err().to_string(),
        "batch truncated in string record at offset 0"
    );
}

#[test]
fn frame_count_beyond_the_batch_is_truncation() {
    let mut e = Encoder::new();
    e.sample(&sample(Some(1), 1));
    let mut bytes = e.take();
    let n = bytes.len();
    // frames count sits before the two frames (16 bytes)
    bytes[n - 18..n - 16].copy_from_slice(&u16::MAX.to_le_bytes());
    let (_, r) = decode_all(&mut Decoder::new(), &bytes);
    assert!(matches!(
        r.unwrap_err(),
        BatchError::Truncated {
            record: "sample",
            ..
        }
    ));
}

#[test]
fn unknown_tag() {
    let mut e = Encoder::new();
    e.stream_end("");
    let at = e.bytes().len();
    e.raw(&[9, 0, 0]);
    let (out, r) = decode_all(&mut Decoder::new(), e.bytes());
    assert_eq!(out, vec![Record::StreamEnd(String::new())]);
    let err = r.unwrap_err();
    assert_eq!(err, BatchError::UnknownTag { offset: at, tag: 9 });
    assert_eq!(
        err.to_string(),
        format!("batch has unknown record tag 9 at offset {at}")
    );
}

#[test]
fn string_id_out_of_range() {
    let mut e = Encoder::new();
    e.string("x");
    e.raw(&[TAG_STREAM_END, 5, 0, 0, 0]);
    let (_, r) = decode_all(&mut Decoder::new(), e.bytes());
    let err = r.unwrap_err();
    assert_eq!(
        err,
        BatchError::StringIdOutOfRange {
            offset: 11,
            id: 5,
            known: 1
        }
    );
    assert_eq!(
        err.to_string(),
        "batch uses string id 5 at offset 11, but only 1 strings are known"
    );
}

#[test]
fn non_dense_string_id() {
    let mut e = Encoder::new();
    e.raw(&[TAG_STRING, 1, 0, 0, 0, 1, 0, 0, 0, b'z']);
    let (_, r) = decode_all(&mut Decoder::new(), e.bytes());
    assert_eq!(
        r.unwrap_err().to_string(),
        "batch defines string id 1 at offset 1, expected the next id 0"
    );
    // Redefining an id already known is not dense either.
    let mut d = Decoder::new();
    let ok = [TAG_STRING, 0, 0, 0, 0, 1, 0, 0, 0, b'a'];
    decode_all(&mut d, &ok).1.unwrap();
    assert!(matches!(
        decode_all(&mut d, &ok).1,
        Err(BatchError::NonDenseStringId {
            id: 0,
            expected: 1,
            ..
        })
    ));
}

#[test]
fn bad_utf8() {
    let bytes = [TAG_STRING, 0, 0, 0, 0, 2, 0, 0, 0, 0xc3, 0x28];
    let (_, r) = decode_all(&mut Decoder::new(), &bytes);
    assert_eq!(
        r.unwrap_err().to_string(),
        "batch string 0 at offset 9 is not valid UTF-8"
    );
}

#[test]
fn empty_batch_is_fine() {
    let (out, r) = decode_all(&mut Decoder::new(), &[]);
    r.unwrap();
    assert!(out.is_empty());
}

#[test]
fn definitions_and_releases_round_trip_with_inline_text() {
    use crate::core::context::repo::raw::{encode, RawMap};
    let mut e = Encoder::new();
    e.define(1 << 62, &[("endpoint", "/a"), ("request", "é42")]);
    e.release(1 << 62);
    e.define((1 << 62) + 1, &[]);
    let bytes = e.bytes().to_vec();
    let mut out = Vec::new();
    Decoder::new().decode(&bytes, &mut out).unwrap();
    let first = encode(&[("endpoint", "/a"), ("request", "é42")]);
    // tag, id, then the wire map; a release is tag and id
    let second_at = 9 + first.len() + 9 + 9;
    assert_eq!(
        out,
        vec![
            Record::Define {
                id: 1 << 62,
                raw: 9..9 + first.len()
            },
            Record::Release(1 << 62),
            Record::Define {
                id: (1 << 62) + 1,
                raw: second_at..second_at + 2
            },
        ]
    );
    let Record::Define { raw, .. } = &out[0] else {
        unreachable!()
    };
    let map = RawMap::parse(&bytes[raw.clone()])
        .unwrap()
        .to_map()
        .unwrap();
    assert_eq!(
        map.iter().collect::<Vec<_>>(),
        vec![("endpoint", "/a"), ("request", "é42")]
    );
    assert_eq!(map.len(), 2);
}

#[test]
fn a_truncated_definition_is_an_error_naming_the_record() {
    let mut e = Encoder::new();
    e.define(7, &[("k", "value")]);
    let bytes = &e.bytes()[..e.bytes().len() - 2];
    let err = Decoder::new().decode(bytes, &mut Vec::new()).unwrap_err();
    assert_eq!(
        err,
        BatchError::Truncated {
            offset: 0,
            record: "define"
        }
    );
}
