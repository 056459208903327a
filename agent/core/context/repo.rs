//! Context maps interned into ids, with reference counts and deferred reclamation. Pure.
//!
//! `Natives.intern` creates (or finds) the id of a map and takes one reference; the facade drops
//! references when a context is closed or a snapshot is no longer used. An id whose count reaches
//! zero stays resolvable for `retention_ns` (samples taken while it was installed are joined up to
//! that long afterwards) and is then freed by `collect`. Interning an identical map before then
//! revives the same id.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::Arc;

use crate::core::model::{ContextId, ContextMap, EMPTY_CONTEXT};

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
/// Distinct key strings shared between maps; further keys are stored per map.
const MAX_SHARED_KEYS: usize = 4096;

#[derive(Debug)]
struct Entry {
    map: Arc<ContextMap>,
    refs: u64,
    /// When `refs == 0`: the time from which `collect` frees the entry.
    due: Option<i64>,
}

/// The interned context maps.
#[derive(Debug)]
pub struct Repository {
    retention_ns: i64,
    max_ids: usize,
    by_id: HashMap<ContextId, Entry>,
    by_map: HashMap<Arc<ContextMap>, ContextId>,
    /// Scheduled removals `(due, id)`; stale ones (revived, or rescheduled) are skipped.
    schedule: BinaryHeap<Reverse<(i64, ContextId)>>,
    keys: HashSet<Arc<str>>,
    next_id: ContextId,
    interned_total: u64,
    empty: Arc<ContextMap>,
}

/// Checks the `Natives.intern` contract: keys non-empty, sorted and unique, bounded sizes.
pub fn validate<K: AsRef<str>, V: AsRef<str>>(entries: &[(K, V)]) -> Result<(), String> {
    if entries.len() > MAX_ENTRIES {
        return Err(format!(
            "context has {} entries (at most {MAX_ENTRIES})",
            entries.len()
        ));
    }
    for (i, (key, value)) in entries.iter().enumerate() {
        let (key, value) = (key.as_ref(), value.as_ref());
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
        if i > 0 && entries[i - 1].0.as_ref() >= key {
            return Err(format!(
                "context keys not sorted and unique: {:?} then {key:?}",
                entries[i - 1].0.as_ref()
            ));
        }
    }
    Ok(())
}

impl Repository {
    /// Released ids stay resolvable for `retention_ns` (negative counts as 0).
    pub fn new(retention_ns: i64) -> Repository {
        Repository {
            retention_ns: retention_ns.max(0),
            max_ids: DEFAULT_MAX_IDS,
            by_id: HashMap::new(),
            by_map: HashMap::new(),
            schedule: BinaryHeap::new(),
            keys: HashSet::new(),
            next_id: EMPTY_CONTEXT + 1,
            interned_total: 0,
            empty: Arc::new(ContextMap::default()),
        }
    }

    /// Bounds the ids held at once; `intern` of a new map fails beyond it.
    pub fn set_max_ids(&mut self, max_ids: usize) {
        self.max_ids = max_ids.max(1);
    }

    fn shared_key(&mut self, key: &str) -> Arc<str> {
        if let Some(k) = self.keys.get(key) {
            return k.clone();
        }
        let k: Arc<str> = Arc::from(key);
        if self.keys.len() < MAX_SHARED_KEYS {
            self.keys.insert(k.clone());
        }
        k
    }

    /// The checked map of `entries`, keys shared with other maps.
    /// Borrows the entries: one allocation per value (its `Arc<str>`), none per known key.
    fn map_of<K: AsRef<str>, V: AsRef<str>>(
        &mut self,
        entries: &[(K, V)],
    ) -> Result<ContextMap, String> {
        validate(entries)?;
        Ok(ContextMap {
            entries: entries
                .iter()
                .map(|(k, v)| (self.shared_key(k.as_ref()), Arc::from(v.as_ref())))
                .collect(),
        })
    }

    /// The id of the map `entries` (sorted by key, keys unique), taking one reference on it.
    /// Identical maps get the same id while it is held or awaiting reclamation. Ids are `>= 1`
    /// (an empty map too: it is a map like any other and resolves to an empty `ContextMap`).
    pub fn intern(&mut self, entries: Vec<(String, String)>) -> Result<ContextId, String> {
        let map = self.map_of(&entries)?;
        if let Some(&id) = self.by_map.get(&map) {
            if let Some(entry) = self.by_id.get_mut(&id) {
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
                map,
                refs: 1,
                due: None,
            },
        );
        self.interned_total += 1;
        Ok(id)
    }

    /// Records the map the facade numbered `id` itself, holding one reference (released as any
    /// other). Equal maps under other ids share their memory but keep their own ids. Fails on
    /// bad input, an id outside the facade's range or already defined, and past the id bound;
    /// the id then stays unknown and its samples are reported `context_released`.
    pub fn define<K: AsRef<str>, V: AsRef<str>>(
        &mut self,
        id: ContextId,
        entries: &[(K, V)],
    ) -> Result<(), String> {
        if !(FIRST_DEFINED_ID..(1 << 63)).contains(&id) {
            return Err(format!("context id {id} is outside the facade's range"));
        }
        if self.by_id.contains_key(&id) {
            return Err(format!("context id {id} defined twice"));
        }
        if self.by_id.len() >= self.max_ids {
            return Err(format!(
                "too many context maps held at once (at most {}): are contexts closed?",
                self.max_ids
            ));
        }
        let map = self.map_of(entries)?;
        let map = match self.by_map.get_key_value(&map) {
            Some((shared, _)) => shared.clone(),
            None => Arc::new(map),
        };
        self.by_id.insert(
            id,
            Entry {
                map,
                refs: 1,
                due: None,
            },
        );
        self.interned_total += 1;
        Ok(())
    }

    /// Drops one reference on `id`; at zero the id is freed by a `collect` at or after
    /// `now_ns + retention`. Returns `false` (and changes nothing) for `EMPTY_CONTEXT`, an unknown
    /// id, or an id without references left.
    pub fn release(&mut self, id: ContextId, now_ns: i64) -> bool {
        let Some(entry) = self.by_id.get_mut(&id) else {
            return false;
        };
        if entry.refs == 0 {
            return false;
        }
        entry.refs -= 1;
        if entry.refs == 0 {
            let due = now_ns.saturating_add(self.retention_ns);
            entry.due = Some(due);
            self.schedule.push(Reverse((due, id)));
        }
        true
    }

    /// The map of `id`: an empty map for `EMPTY_CONTEXT`, `None` when unknown or freed.
    pub fn get(&self, id: ContextId) -> Option<Arc<ContextMap>> {
        if id == EMPTY_CONTEXT {
            return Some(self.empty.clone());
        }
        self.by_id.get(&id).map(|e| e.map.clone())
    }

    /// References currently held on `id` (0 when unknown).
    pub fn refs(&self, id: ContextId) -> u64 {
        self.by_id.get(&id).map_or(0, |e| e.refs)
    }

    /// Frees the ids whose reclamation time is `<= now_ns` and that were not revived. Returns how
    /// many were freed.
    pub fn collect(&mut self, now_ns: i64) -> usize {
        let mut freed = 0;
        while let Some(&Reverse((due, id))) = self.schedule.peek() {
            if due > now_ns {
                break;
            }
            self.schedule.pop();
            let current = matches!(
                self.by_id.get(&id),
                Some(e) if e.refs == 0 && e.due == Some(due)
            );
            if current {
                if let Some(entry) = self.by_id.remove(&id) {
                    // Only the interned id owns the content's slot (defined ids share memory).
                    if self.by_map.get(&*entry.map) == Some(&id) {
                        self.by_map.remove(&*entry.map);
                    }
                    freed += 1;
                }
            }
        }
        freed
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

#[cfg(test)]
mod tests;
