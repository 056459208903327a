//! Entries by id, for ids handed out by a counter and dropped roughly in the order they were
//! handed out. Pure.
//!
//! Such ids (the maps the facade numbers itself, from `FIRST_DEFINED_ID`; Java thread ids, one
//! per virtual thread of a thread-per-request server) arrive, are looked up and are removed
//! thousands a second: they live in a window indexed by `id - base`, appended at the back and
//! removed from the front, so that adding, finding and removing one touches memory next to the
//! last one's instead of a hash table's bucket last seen seconds ago (on a server, out of every
//! cache). Everything else — ids below `first_dense`, an id far ahead of or behind the window,
//! an entry that stays at the front while the window grows past its bound — lives in a hash map.

use std::collections::HashMap;

use ahash::RandomState;

use super::slots::Slots;

/// An id this far past the window's end goes to the hash map (the window never grows by more
/// than that at once).
const MAX_GAP: u64 = 4096;

#[derive(Debug)]
pub struct Ids<E> {
    hashed: HashMap<u64, E, RandomState>,
    /// Ids from here up may live in the window.
    first_dense: u64,
    /// How many ids `>= first_dense` are in `hashed` (none: a window miss is a miss).
    hashed_dense: usize,
    /// Id of `window[0]`.
    base: u64,
    /// In chunks (`slots.rs`): what the span costs is what it holds.
    window: Slots<E>,
    window_live: usize,
}

impl<E> Ids<E> {
    pub fn new(first_dense: u64) -> Self {
        Ids {
            hashed: HashMap::default(),
            first_dense,
            hashed_dense: 0,
            base: first_dense,
            window: Slots::default(),
            window_live: 0,
        }
    }

    /// Index of `id` in the window, if it falls within it.
    fn slot(&self, id: u64) -> Option<usize> {
        let i = usize::try_from(id.checked_sub(self.base)?).ok()?;
        (i < self.window.len()).then_some(i)
    }

    fn in_hash(&self, id: u64) -> bool {
        id < self.first_dense || self.hashed_dense > 0
    }

    pub fn get(&self, id: u64) -> Option<&E> {
        if let Some(e) = self.slot(id).and_then(|i| self.window.get(i).as_ref()) {
            return Some(e);
        }
        self.in_hash(id).then(|| self.hashed.get(&id)).flatten()
    }

    pub fn get_mut(&mut self, id: u64) -> Option<&mut E> {
        if let Some(i) = self.slot(id).filter(|&i| self.window.get(i).is_some()) {
            return self.window.get_mut(i).as_mut();
        }
        if self.in_hash(id) {
            self.hashed.get_mut(&id)
        } else {
            None
        }
    }

    pub fn contains(&self, id: u64) -> bool {
        self.get(id).is_some()
    }

    /// Adds `e` as `id`'s entry; the caller has checked that `id` has none.
    pub fn insert(&mut self, id: u64, e: E) {
        if id >= self.first_dense {
            if self.window.is_empty() {
                self.base = id;
            }
            if let Some(gap) = id.checked_sub(self.base) {
                let end = self.window.len() as u64;
                if gap < end {
                    *self.window.get_mut(gap as usize) = Some(e);
                    self.window_live += 1;
                    return;
                }
                if gap - end <= MAX_GAP {
                    for _ in end..gap {
                        self.window.push_back(None);
                    }
                    self.window.push_back(Some(e));
                    self.window_live += 1;
                    return;
                }
            }
            self.hashed_dense += 1;
        }
        self.hashed.insert(id, e);
    }

    pub fn remove(&mut self, id: u64) -> Option<E> {
        if let Some(i) = self.slot(id).filter(|&i| self.window.get(i).is_some()) {
            let e = self.window.get_mut(i).take();
            self.window_live -= 1;
            self.pop_freed();
            return e;
        }
        if !self.in_hash(id) {
            return None;
        }
        let e = self.hashed.remove(&id);
        if e.is_some() && id >= self.first_dense {
            self.hashed_dense -= 1;
        }
        e
    }

    fn pop_freed(&mut self) {
        while self.window.front().is_some_and(Option::is_none) {
            self.window.pop_front();
            self.base += 1;
        }
    }

    /// Moves the entries at the window's front to the hash map while the window spans more than
    /// `max` ids (a long-lived entry at the front would keep every later slot).
    pub fn bound_window(&mut self, max: usize) {
        while self.window.len() > max {
            if let Some(Some(e)) = self.window.pop_front() {
                self.window_live -= 1;
                self.hashed.insert(self.base, e);
                self.hashed_dense += 1;
            }
            self.base += 1;
            self.pop_freed();
        }
    }

    pub fn len(&self) -> usize {
        self.hashed.len() + self.window_live
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Ids the window spans (tests and figures).
    pub fn window_span(&self) -> usize {
        self.window.len()
    }

    /// Memory the window holds, in bytes (tests: its slots, spanned or not yet reused).
    #[cfg(test)]
    pub fn window_bytes(&self) -> usize {
        self.window.bytes()
    }

    /// Every entry, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &E> {
        self.hashed.values().chain(self.window.iter().flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: u64 = 1000;

    #[test]
    fn dense_ids_in_the_window_others_hashed() {
        let mut ids = Ids::new(D);
        ids.insert(5, "own");
        ids.insert(D + 1, "b");
        ids.insert(D, "a"); // behind the window's base: hashed
        ids.insert(D + 3, "d");
        assert_eq!(ids.window_span(), 3, "D+1..=D+3");
        assert_eq!(ids.len(), 4);
        assert_eq!(ids.get(5), Some(&"own"));
        assert_eq!(ids.get(D), Some(&"a"));
        assert_eq!(ids.get(D + 2), None);
        assert_eq!(ids.get(D + 3), Some(&"d"));
        *ids.get_mut(D + 3).unwrap() = "D";
        assert_eq!(ids.remove(D + 1), Some("b"));
        assert_eq!(ids.window_span(), 1, "the front freed up to D+3");
        assert_eq!(ids.remove(D + 1), None);
        assert_eq!(ids.remove(D), Some("a"));
        assert_eq!(ids.remove(D + 3), Some("D"));
        assert_eq!(ids.remove(5), Some("own"));
        assert!(ids.is_empty());
        assert_eq!(ids.window_span(), 0);
    }

    #[test]
    fn an_id_far_ahead_is_hashed_and_still_found_once_the_window_reaches_it() {
        let mut ids = Ids::new(D);
        ids.insert(D, 0);
        let far = D + MAX_GAP + 10;
        ids.insert(far, 1);
        assert_eq!(ids.window_span(), 1);
        for id in D + 1..far {
            ids.insert(id, 2);
        }
        assert!(ids.window_span() > MAX_GAP as usize);
        assert_eq!(
            ids.get(far),
            Some(&1),
            "the window covers it, the hash has it"
        );
        assert_eq!(ids.remove(far), Some(1));
        assert_eq!(ids.get(far), None);
        assert_eq!(ids.len(), (far - D) as usize);
    }

    #[test]
    fn a_long_lived_front_entry_moves_out_of_a_bounded_window() {
        let mut ids = Ids::new(D);
        ids.insert(D, "kept");
        for id in D + 1..D + 100 {
            ids.insert(id, "short");
            ids.remove(id);
        }
        assert_eq!(ids.window_span(), 100, "pinned by the front");
        ids.bound_window(10);
        assert_eq!(ids.window_span(), 0);
        assert_eq!(ids.get(D), Some(&"kept"));
        ids.insert(D + 100, "next");
        assert_eq!(ids.window_span(), 1);
        let mut all: Vec<_> = ids.values().copied().collect();
        all.sort();
        assert_eq!(all, ["kept", "next"]);
        assert_eq!(ids.remove(D), Some("kept"));
        assert_eq!(ids.len(), 1);
    }
}
