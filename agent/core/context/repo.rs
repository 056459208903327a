//! Context maps interned into ids, with reference counts and deferred reclamation. Pure.
//!
//! `Natives.intern` creates (or finds) the id of a map and takes one reference; the facade drops
//! references when a context is closed or a snapshot is no longer used. An id whose count reaches
//! zero stays resolvable for `retention_ns` (samples taken while it was installed are joined up to
//! that long afterwards) and is then freed by `collect`. Interning an identical map before then
//! revives the same id.
//!
//! Maps the facade numbers itself (`define`, from the stream's definition records) are kept
//! in their wire form in append-only blocks (`blocks`, `raw`) and built into a `ContextMap` only
//! when a sample needs one (`get`): a server makes thousands of request-scoped maps a second and
//! samples a few of them, and a map per allocation freed five seconds later, on memory long
//! since out of the caches, made the worker's allocator its largest cost (bench/README §10).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use ahash::RandomState;

use crate::core::model::{ContextId, ContextMap, EMPTY_CONTEXT};

pub mod blocks;
pub mod raw;

use crate::core::context::ids::Ids;
use blocks::{Blocks, Place};
use raw::RawMap;

/// Longest accepted key, in bytes.
pub const MAX_KEY_BYTES: usize = 1024;
/// Longest accepted value, in bytes.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;
/// Most entries in one map.
pub const MAX_ENTRIES: usize = 1024;
/// Default bound on ids held at once (live or awaiting reclamation).
pub const DEFAULT_MAX_IDS: usize = 1 << 22;
/// Ids from here up are numbered by the facade itself (`Definitions.define` in the bridge, no
/// JNI call) and announced to the agent in the stream's batches; ids below are the agent's own
/// (`Natives.intern`). The facade's counter starts here; the agent's never gets close.
pub const FIRST_DEFINED_ID: ContextId = 1 << 62;

/// A block still referred to after this long (at least) has its maps taken out, so that a
/// long-lived map does not pin the block of thousands of freed ones: twice the retention.
const MIN_BLOCK_AGE_NS: i64 = 1_000_000_000;

/// Most ids the window of defined ids spans (`context/ids.rs`): ≈ 9 s of a server's 7 000 new maps a
/// second; past it, the oldest entries still held move to the hash map.
const MAX_WINDOW: usize = 1 << 16;

#[derive(Debug)]
enum Stored {
    Map(Arc<ContextMap>),
    /// A defined map still in its wire form, built by the first `get`.
    Raw(Place),
}

#[derive(Debug)]
struct Entry {
    stored: Stored,
    refs: u64,
    /// When `refs == 0`: the time from which `collect` frees the entry.
    due: Option<i64>,
    /// Whether this id is the map's slot in `by_map` (interned ids; a defined id only shares
    /// the memory of an equal map), so `collect` hashes the map only to remove such a slot.
    owns_slot: bool,
}

/// The interned context maps.
#[derive(Debug)]
pub struct Repository {
    retention_ns: i64,
    max_ids: usize,
    by_id: Ids<Entry>,
    by_map: HashMap<Arc<ContextMap>, ContextId, RandomState>,
    /// Scheduled removals `(due, id)` in due order (dues never decrease: see `release`); stale
    /// ones (revived, or rescheduled) are skipped.
    schedule: VecDeque<(i64, ContextId)>,
    next_id: ContextId,
    interned_total: u64,
    empty: Arc<ContextMap>,
    blocks: Blocks,
}

/// Checks the contract of a map from the facade (`Natives.intern`, `Definitions.define`): keys
/// non-empty, sorted and unique, bounded sizes.
pub fn validate(map: &ContextMap) -> Result<(), String> {
    check_count(map.len())?;
    let mut previous: Option<&str> = None;
    for (key, value) in map.iter() {
        check_entry(key, value)?;
        if let Some(p) = previous.filter(|p| *p >= key) {
            return Err(format!(
                "context keys not sorted and unique: {p:?} then {key:?}"
            ));
        }
        previous = Some(key);
    }
    Ok(())
}

fn check_count(entries: usize) -> Result<(), String> {
    if entries > MAX_ENTRIES {
        return Err(format!(
            "context has {entries} entries (at most {MAX_ENTRIES})"
        ));
    }
    Ok(())
}

fn check_entry(key: &str, value: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("context key is empty".to_string());
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(format!(
            "context key of {} bytes (at most {MAX_KEY_BYTES})",
            key.len()
        ));
    }
    if value.len() > MAX_VALUE_BYTES {
        return Err(format!(
            "value of context key {key:?} has {} bytes (at most {MAX_VALUE_BYTES})",
            value.len()
        ));
    }
    Ok(())
}

impl Repository {
    /// Released ids stay resolvable for `retention_ns` (negative counts as 0).
    pub fn new(retention_ns: i64) -> Repository {
        Repository {
            retention_ns: retention_ns.max(0),
            max_ids: DEFAULT_MAX_IDS,
            by_id: Ids::new(FIRST_DEFINED_ID),
            by_map: HashMap::default(),
            schedule: VecDeque::new(),
            next_id: EMPTY_CONTEXT + 1,
            interned_total: 0,
            empty: Arc::new(ContextMap::default()),
            blocks: Blocks::default(),
        }
    }

    /// Bounds the ids held at once; `intern` of a new map fails beyond it.
    pub fn set_max_ids(&mut self, max_ids: usize) {
        self.max_ids = max_ids.max(1);
    }

    /// The id of the map `entries` (sorted by key, keys unique), taking one reference on it.
    /// Identical maps get the same id while it is held or awaiting reclamation. Ids are `>= 1`
    /// (an empty map too: it is a map like any other and resolves to an empty `ContextMap`).
    pub fn intern(&mut self, entries: Vec<(String, String)>) -> Result<ContextId, String> {
        // Sizes before the map is built: within them its text stays far below the 4 GiB its
        // offsets can address.
        check_count(entries.len())?;
        for (key, value) in &entries {
            check_entry(key, value)?;
        }
        let map = ContextMap::from_pairs(&entries);
        validate(&map)?;
        if let Some(&id) = self.by_map.get(&map) {
            if let Some(entry) = self.by_id.get_mut(id) {
                entry.refs = entry.refs.saturating_add(1);
                entry.due = None;
                return Ok(id);
            }
        }
        if self.by_id.len() >= self.max_ids {
            return Err(format!(
                "too many context maps held at once (at most {}): are contexts closed?",
                self.max_ids
            ));
        }
        let id = self.next_id;
        self.next_id = id
            .checked_add(1)
            .ok_or_else(|| "context ids exhausted".to_string())?;
        let map = Arc::new(map);
        self.by_map.insert(map.clone(), id);
        self.by_id.insert(
            id,
            Entry {
                stored: Stored::Map(map),
                refs: 1,
                due: None,
                owns_slot: true,
            },
        );
        self.interned_total += 1;
        Ok(id)
    }

    /// Records the map the facade numbered `id` itself, in its wire form (`raw`, from a
    /// definition record), holding one reference (released as any other); `now_ns` dates its
    /// block. The map is kept as it is until a sample needs it (`get`), and then shares the
    /// memory of an equal interned map. Fails on bad input, an id outside the facade's range or
    /// already defined, and past the id bound; the id then stays unknown and its samples are
    /// reported `context_released`.
    pub fn define(&mut self, id: ContextId, raw: &[u8], now_ns: i64) -> Result<(), String> {
        self.check_new_defined(id)?;
        RawMap::parse(raw)
            .ok_or_else(|| "malformed context definition".to_string())?
            .validate()?;
        let place = self.blocks.push(id, raw, now_ns);
        self.by_id.insert(
            id,
            Entry {
                stored: Stored::Raw(place),
                refs: 1,
                due: None,
                owns_slot: false,
            },
        );
        self.interned_total += 1;
        Ok(())
    }

    fn check_new_defined(&self, id: ContextId) -> Result<(), String> {
        if !(FIRST_DEFINED_ID..(1 << 63)).contains(&id) {
            return Err(format!("context id {id} is outside the facade's range"));
        }
        if self.by_id.contains(id) {
            return Err(format!("context id {id} defined twice"));
        }
        if self.by_id.len() >= self.max_ids {
            return Err(format!(
                "too many context maps held at once (at most {}): are contexts closed?",
                self.max_ids
            ));
        }
        Ok(())
    }

    /// Drops one reference on `id`; at zero the id is freed by a `collect` at or after
    /// `now_ns + retention` (or after the latest time already scheduled, when the retention was
    /// shortened or `now_ns` went back: the schedule stays in order). Returns `false` (and changes nothing) for `EMPTY_CONTEXT`, an unknown
    /// id, or an id without references left.
    pub fn release(&mut self, id: ContextId, now_ns: i64) -> bool {
        let Some(entry) = self.by_id.get_mut(id) else {
            return false;
        };
        if entry.refs == 0 {
            return false;
        }
        entry.refs -= 1;
        if entry.refs == 0 {
            let mut due = now_ns.saturating_add(self.retention_ns);
            if let Some(&(last, _)) = self.schedule.back() {
                due = due.max(last);
            }
            entry.due = Some(due);
            self.schedule.push_back((due, id));
        }
        true
    }

    /// The map of `id`: an empty map for `EMPTY_CONTEXT`, `None` when unknown or freed. A
    /// defined map still in its wire form is built now, once.
    pub fn get(&mut self, id: ContextId) -> Option<Arc<ContextMap>> {
        if id == EMPTY_CONTEXT {
            return Some(self.empty.clone());
        }
        let entry = self.by_id.get_mut(id)?;
        build(&mut self.blocks, &self.by_map, entry);
        match &entry.stored {
            Stored::Map(map) => Some(map.clone()),
            Stored::Raw(_) => None,
        }
    }

    /// References currently held on `id` (0 when unknown).
    pub fn refs(&self, id: ContextId) -> u64 {
        self.by_id.get(id).map_or(0, |e| e.refs)
    }

    /// Frees the ids whose reclamation time is `<= now_ns` and that were not revived. Returns how
    /// many were freed.
    pub fn collect(&mut self, now_ns: i64) -> usize {
        let mut freed = 0;
        while let Some(&(due, id)) = self.schedule.front() {
            if due > now_ns {
                break;
            }
            self.schedule.pop_front();
            // The entry is removed only when this schedule entry is its current one.
            let current = self
                .by_id
                .get(id)
                .is_some_and(|e| e.refs == 0 && e.due == Some(due));
            if current {
                if let Some(entry) = self.by_id.remove(id) {
                    match &entry.stored {
                        // Only an interned id owns the content's slot (defined ids share memory).
                        Stored::Map(map) if entry.owns_slot => {
                            self.by_map.remove(&**map);
                        }
                        Stored::Map(_) => {}
                        Stored::Raw(place) => self.blocks.unref(place),
                    }
                    freed += 1;
                }
            }
        }
        self.take_out_of_old_blocks(now_ns);
        self.by_id.bound_window(MAX_WINDOW);
        freed
    }

    /// Builds the maps still referring to blocks older than twice the retention, so that those
    /// blocks are freed.
    fn take_out_of_old_blocks(&mut self, now_ns: i64) {
        let age = self.retention_ns.saturating_mul(2).max(MIN_BLOCK_AGE_NS);
        let before = now_ns.saturating_sub(age);
        while let Some((seq, ids)) = self.blocks.take_old_front(before) {
            for id in ids {
                if let Some(entry) = self.by_id.get_mut(id) {
                    if matches!(&entry.stored, Stored::Raw(p) if p.block == seq) {
                        build(&mut self.blocks, &self.by_map, entry);
                    }
                }
            }
            if self
                .blocks
                .take_old_front(before)
                .is_some_and(|(s, _)| s == seq)
            {
                break; // a map that would not build: it keeps its block (never for a valid map)
            }
        }
    }

    /// Blocks holding defined maps in their wire form, and the bytes they reserve.
    pub fn blocks(&self) -> (usize, usize) {
        (self.blocks.len(), self.blocks.reserved())
    }

    /// Ids held (live or awaiting reclamation).
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Distinct ids ever created.
    pub fn interned_total(&self) -> u64 {
        self.interned_total
    }

    /// Changes the retention of ids released from now on.
    pub fn set_retention_ns(&mut self, retention_ns: i64) {
        self.retention_ns = retention_ns.max(0);
    }

    pub fn retention_ns(&self) -> i64 {
        self.retention_ns
    }
}

/// Builds `entry`'s map from its wire form, if it is still in it, sharing the memory of an equal
/// interned map, and lets go of its block.
fn build(
    blocks: &mut Blocks,
    interned: &HashMap<Arc<ContextMap>, ContextId, RandomState>,
    entry: &mut Entry,
) {
    let Stored::Raw(place) = &entry.stored else {
        return;
    };
    let Some(map) = RawMap::parse(blocks.get(place)).and_then(|r| r.to_map()) else {
        return;
    };
    blocks.unref(place);
    let map = match interned.get_key_value(&map) {
        Some((shared, _)) => shared.clone(),
        None => Arc::new(map),
    };
    entry.stored = Stored::Map(map);
}

#[cfg(test)]
mod tests;
