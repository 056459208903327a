use super::*;

fn kv(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn repo() -> Repository {
    Repository::new(1_000)
}

#[test]
fn interns_identical_maps_to_one_id() {
    let mut r = repo();
    let a = r
        .intern(kv(&[("endpoint", "/orders"), ("request", "1")]))
        .unwrap();
    let b = r
        .intern(kv(&[("endpoint", "/orders"), ("request", "2")]))
        .unwrap();
    let a2 = r
        .intern(kv(&[("endpoint", "/orders"), ("request", "1")]))
        .unwrap();
    assert!(a >= 1 && b >= 1);
    assert_ne!(a, b);
    assert_eq!(a, a2);
    assert_eq!(r.refs(a), 2);
    assert_eq!(r.len(), 2);
    assert_eq!(r.interned_total(), 2);
    let map = r.get(a).unwrap();
    assert_eq!(map.get("endpoint"), Some("/orders"));
    assert_eq!(map.get("request"), Some("1"));
}

#[test]
fn empty_context_and_unknown_ids() {
    let mut r = repo();
    assert_eq!(r.get(EMPTY_CONTEXT).map(|m| m.is_empty()), Some(true));
    assert!(r.get(12345).is_none());
    assert!(r.get(u64::MAX).is_none());
}

#[test]
fn empty_map_is_a_regular_id() {
    let mut r = repo();
    let id = r.intern(Vec::new()).unwrap();
    assert!(id >= 1);
    assert!(r.get(id).unwrap().is_empty());
}

#[test]
fn rejects_bad_input() {
    let mut r = repo();
    assert!(r.intern(kv(&[("b", "1"), ("a", "2")])).is_err());
    assert!(r.intern(kv(&[("a", "1"), ("a", "2")])).is_err());
    assert!(r.intern(kv(&[("", "1")])).is_err());
    assert!(r
        .intern(vec![("k".repeat(MAX_KEY_BYTES + 1), String::new())])
        .is_err());
    assert!(r
        .intern(vec![("k".into(), "v".repeat(MAX_VALUE_BYTES + 1))])
        .is_err());
    let many: Vec<_> = (0..=MAX_ENTRIES)
        .map(|i| (format!("k{i:05}"), String::new()))
        .collect();
    assert!(r.intern(many).is_err());
    assert_eq!(r.len(), 0);
    assert_eq!(r.interned_total(), 0);
}

#[test]
fn release_schedules_and_collect_frees() {
    let mut r = repo();
    let a = r.intern(kv(&[("k", "v")])).unwrap();
    r.intern(kv(&[("k", "v")])).unwrap();
    assert!(r.release(a, 100));
    assert_eq!(r.collect(10_000), 0, "still referenced");
    assert!(r.release(a, 200));
    assert_eq!(r.collect(1_199), 0, "retention not over");
    assert!(r.get(a).is_some());
    assert_eq!(r.collect(1_200), 1);
    assert!(r.get(a).is_none());
    assert_eq!(r.len(), 0);
    // A new intern of the same map gets a new id.
    let a2 = r.intern(kv(&[("k", "v")])).unwrap();
    assert_ne!(a, a2);
    assert_eq!(r.interned_total(), 2);
}

#[test]
fn interning_again_before_removal_revives() {
    let mut r = repo();
    let a = r.intern(kv(&[("k", "v")])).unwrap();
    r.release(a, 0);
    assert_eq!(r.intern(kv(&[("k", "v")])).unwrap(), a);
    assert_eq!(r.collect(5_000), 0);
    assert!(r.get(a).is_some());
    // Released again later: the new schedule applies, not the stale one.
    r.release(a, 3_000);
    assert_eq!(r.collect(3_999), 0);
    assert_eq!(r.collect(4_000), 1);
}

#[test]
fn over_release_and_bad_ids_are_ignored() {
    let mut r = repo();
    assert!(!r.release(EMPTY_CONTEXT, 0));
    assert!(!r.release(99, 0));
    let a = r.intern(kv(&[("k", "v")])).unwrap();
    assert!(r.release(a, 0));
    assert!(!r.release(a, 0));
    assert_eq!(r.refs(a), 0);
    assert_eq!(r.collect(i64::MAX), 1);
}

#[test]
fn extreme_times_do_not_overflow() {
    let mut r = Repository::new(i64::MAX);
    let a = r.intern(kv(&[("k", "v")])).unwrap();
    r.release(a, i64::MAX - 1);
    assert_eq!(r.collect(i64::MAX - 1), 0);
    assert_eq!(r.collect(i64::MAX), 1);
    assert_eq!(Repository::new(-5).retention_ns(), 0);
}

#[test]
fn bounded_number_of_ids() {
    let mut r = repo();
    r.set_max_ids(2);
    let a = r.intern(kv(&[("k", "1")])).unwrap();
    r.intern(kv(&[("k", "2")])).unwrap();
    assert!(r.intern(kv(&[("k", "3")])).is_err());
    // An existing map can still be referenced.
    assert_eq!(r.intern(kv(&[("k", "1")])).unwrap(), a);
    r.release(a, 0);
    r.release(a, 0);
    r.collect(i64::MAX);
    assert!(r.intern(kv(&[("k", "3")])).is_ok());
}

#[test]
fn defined_ids_resolve_release_and_share_memory_with_equal_maps() {
    let mut r = repo();
    let interned = r.intern(kv(&[("k", "v")])).unwrap();
    let a = FIRST_DEFINED_ID;
    let b = FIRST_DEFINED_ID + 1;
    r.define(a, &wire(&[("k", "v")]), 0).unwrap();
    r.define(b, &wire(&[("k", "w")]), 0).unwrap();
    assert!(Arc::ptr_eq(&r.get(a).unwrap(), &r.get(interned).unwrap()));
    assert_eq!(r.get(b).unwrap().get("k"), Some("w"));
    assert_eq!(r.interned_total(), 3);
    // Freeing the defined twin leaves the interned id findable by content.
    assert!(r.release(a, 0));
    assert_eq!(r.collect(i64::MAX), 1);
    assert_eq!(r.get(a), None);
    assert_eq!(r.intern(kv(&[("k", "v")])).unwrap(), interned);
}

#[test]
fn bad_definitions_are_refused_with_a_reason() {
    let mut r = repo();
    let id = FIRST_DEFINED_ID;
    assert!(r.define(5, &wire(&[]), 0).unwrap_err().contains("outside"));
    let unsorted = r.define(id, &wire(&[("b", "1"), ("a", "2")]), 0);
    assert!(unsorted.unwrap_err().contains("not sorted"));
    assert!(r
        .define(id, &wire(&[("", "1")]), 0)
        .unwrap_err()
        .contains("empty"));
    let mut cut = wire(&[("k", "v")]);
    cut.pop();
    assert_eq!(
        r.define(id, &cut, 0).unwrap_err(),
        "malformed context definition"
    );
    r.define(id, &wire(&[("k", "v")]), 0).unwrap();
    let twice = r.define(id, &wire(&[("k", "v")]), 0).unwrap_err();
    assert!(twice.contains("twice"), "{twice}");
    assert_eq!(r.len(), 1);
    assert_eq!(r.blocks().0, 1, "refused maps take no room");
    r.set_max_ids(1);
    assert!(r
        .define(id + 2, &wire(&[]), 0)
        .unwrap_err()
        .contains("too many"));
}

#[test]
fn a_shortened_retention_never_frees_before_what_was_scheduled_earlier() {
    let mut r = Repository::new(100);
    let a = r.intern(kv(&[("k", "a")])).unwrap();
    let b = r.intern(kv(&[("k", "b")])).unwrap();
    assert!(r.release(a, 0)); // due at 100
    r.set_retention_ns(10);
    assert!(r.release(b, 1)); // due at 11, kept in order: at 100
    assert_eq!(r.collect(50), 0);
    assert!(r.get(b).is_some());
    assert_eq!(r.collect(100), 2);
    assert!(r.get(a).is_none() && r.get(b).is_none());
}

fn wire(pairs: &[(&str, &str)]) -> Vec<u8> {
    raw::encode(pairs)
}

#[test]
fn raw_definitions_are_built_on_first_get_and_their_blocks_freed() {
    let mut r = repo();
    let a = FIRST_DEFINED_ID;
    r.define(a, &wire(&[("span_id", "1"), ("trace_id", "t")]), 0)
        .unwrap();
    r.define(a + 1, &wire(&[("span_id", "2")]), 0).unwrap();
    assert_eq!(r.blocks().0, 1, "both in one block");
    assert_eq!(r.interned_total(), 2);
    let map = r.get(a).unwrap();
    assert_eq!(map.get("trace_id"), Some("t"));
    assert!(Arc::ptr_eq(&map, &r.get(a).unwrap()), "built once");
    assert!(r.release(a, 10) && r.release(a + 1, 10));
    assert_eq!(r.get(a + 1).unwrap().get("span_id"), Some("2"));
    assert_eq!(r.collect(10 + 1_000), 2);
    assert!(r.get(a).is_none() && r.get(a + 1).is_none());
    assert_eq!(r.blocks(), (0, 0), "nothing refers to the block any more");
}

#[test]
fn raw_definitions_never_built_still_free_their_block() {
    let mut r = repo();
    for i in 0..1_000 {
        let id = FIRST_DEFINED_ID + i;
        r.define(id, &wire(&[("request", &i.to_string())]), 0)
            .unwrap();
        assert!(r.release(id, 5));
    }
    assert_eq!(r.collect(1_005), 1_000);
    assert_eq!(r.len(), 0);
    assert_eq!(r.blocks(), (0, 0));
}

#[test]
fn a_long_lived_raw_map_is_taken_out_of_its_old_block() {
    let mut r = repo(); // retention 1 µs: blocks older than 1 s are emptied
    let kept = FIRST_DEFINED_ID;
    r.define(kept, &wire(&[("snapshot", "yes")]), 0).unwrap();
    for i in 1..100 {
        r.define(kept + i, &wire(&[("request", &i.to_string())]), 0)
            .unwrap();
        r.release(kept + i, 0);
    }
    assert_eq!(r.collect(500_000_000), 99);
    assert_eq!(r.blocks().0, 1, "pinned by the live map, not yet old");
    r.collect(1_000_000_000);
    assert_eq!(r.blocks(), (0, 0), "its map was taken out");
    assert_eq!(r.get(kept).unwrap().get("snapshot"), Some("yes"));
    assert_eq!(r.refs(kept), 1);
    assert!(r.release(kept, 2_000_000_000));
    assert_eq!(r.collect(2_000_001_000), 1);
}
