//! The per-thread transition ring shared with the Java facade (ARCHITECTURE.md, "Thread ring").
//!
//! The agent allocates the memory (zeroed, 64-byte aligned) and hands it to Java as a direct
//! `ByteBuffer`. The owner thread is the only producer; the agent's worker is the only consumer
//! (`Ring::drain`). [`Producer`] is a Rust copy of the Java writer, used by tests and benchmarks.
//!
//! Memory ordering, in C++/Rust model terms (the Java writer must give the same guarantees):
//!
//! * producer, transition `n` to context `c`, slot `s = n & (capacity - 1)`:
//!   `head.store(2n+1, Release)`; **fence**; `t = now()`; `time[s] = t`, `context[s] = c`
//!   (plain/relaxed); `head.store(2n+2, Release)`. (`current`, header word 2, is reserved: the
//!   Java writer no longer stores it; [`Ring::current`] reads the newest entry instead.)
//!   The fence after the odd store is not in the ARCHITECTURE.md text: a release store only keeps
//!   *earlier* accesses before it, so without a fence the entry writes may become visible before
//!   the odd `head`, and a consumer could keep a half-overwritten slot it believes intact. The
//!   Java writer (`ThreadLog.transition`) uses `VarHandle.storeStoreFence()`, which is enough for
//!   the entries. Nothing orders its `nanoTime()` read after the odd store becoming *visible*
//!   (a store can sit in a store buffer); that window is what `join`'s `safety_ns` covers. The
//!   Rust [`Producer`] uses a `SeqCst` fence, which covers both in the Rust model.
//! * consumer: `h1 = head.load(Acquire)` makes every entry `< h1/2` visible (they were written
//!   before the release store that `h1` reads from, or before an earlier one: single writer).
//!   Entries are then read with relaxed loads: nothing else needs ordering *between* them, and
//!   the `fence(Acquire)` before the relaxed re-read `h2 = head.load(Relaxed)` guarantees that if
//!   any of those loads saw a value written for a later transition `j` (a lap), then `h2 >= 2j+1`
//!   (the producer's fence after storing `2j+1` synchronises with our acquire fence). So every
//!   entry `i` with `i + capacity > j` for all `j <= (h2-1)/2`, i.e. `i >= ceil(h2/2) - capacity`,
//!   was read intact. Note `ceil`, not `floor`: when `h2` is odd, transition `h2/2` is already
//!   overwriting the slot of entry `h2/2 - capacity` (see [`Ring::drain`]).

use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicI64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::model::ContextId;

/// Smallest ring (entries).
pub const MIN_CAPACITY: usize = 16;
/// Largest ring (entries): 16 MiB of entries.
pub const MAX_CAPACITY: usize = 1 << 20;
/// Size of the header before entry 0.
pub const HEADER_BYTES: usize = 64;
/// Size of one entry: `time` (i64) then `context` (i64).
pub const ENTRY_BYTES: usize = 16;
/// Alignment of the ring memory (one cache line).
pub const ALIGN: usize = 64;

// Word (i64) indices of the header fields.
const HEAD: usize = 0;
const TAIL: usize = 1;
/// Header word 2 (`current`) is reserved: no longer written.
const CAPACITY: usize = 3;
const THREAD_ID: usize = 4;
const HANDLE: usize = 5;
/// Header word 6: a capacity the agent asks the producer to move to (0: none), see
/// [`Ring::request_growth`].
const GROW: usize = 6;
/// Rings grow on request up to this many entries (1 MiB): at 1 M transitions a second, 65 ms of a
/// descheduled worker.
pub const MAX_GROWN_CAPACITY: usize = 1 << 16;
const HEADER_WORDS: usize = HEADER_BYTES / 8;

/// One completed context transition read from a ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    /// `System.nanoTime()` read by the producer while publishing the transition.
    pub time_ns: i64,
    /// The context installed from `time_ns` on.
    pub context: ContextId,
}

/// What one [`Ring::drain`] call did.
///
/// Ring indices are the producer's transition numbers (0, 1, 2, ... since the ring was created).
/// The consumed range is `[start_index, end_index)`; its first `lost` entries were overwritten
/// before they could be read and the rest, `[first_kept_index, end_index)`, were appended to
/// `out`. Lost entries therefore always lie between the last transition drained by an earlier
/// call and the first one appended by this call (or, when none was appended, the first one a
/// later call appends): the context is unknown from the former's time until the latter's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DrainOutcome {
    /// First index consumed by this call (the previous tail).
    pub start_index: u64,
    /// Index of the first entry appended to `out` (`== end_index` when none was).
    pub first_kept_index: u64,
    /// One past the last index consumed; the new tail.
    pub end_index: u64,
    /// Entries appended to `out`.
    pub drained: usize,
    /// Entries overwritten before they could be read: `first_kept_index - start_index`.
    pub lost: u64,
    /// `head` was odd when read: transition `end_index` was being written. Its time is at least
    /// the last drained time, and is unknown.
    pub in_flight: bool,
    /// The shared header is inconsistent (`head` negative or moved backwards): nothing was
    /// drained and nothing will ever be again from this ring. Everything after the last
    /// transition drained before is unknowable.
    pub corrupt: bool,
}

impl DrainOutcome {
    fn at(index: u64) -> Self {
        DrainOutcome {
            start_index: index,
            first_kept_index: index,
            end_index: index,
            ..DrainOutcome::default()
        }
    }
}

/// Consumer-private state. Kept out of the shared memory so that Java cannot corrupt it.
#[derive(Debug)]
struct Consumer {
    tail: u64,
    poisoned: bool,
}

/// A thread's transition ring in agent-owned memory.
pub struct Ring {
    words: NonNull<AtomicI64>,
    layout: Layout,
    capacity: usize,
    thread_id: u64,
    handle: u64,
    consumer: Mutex<Consumer>,
}

// SAFETY: the ring memory is only ever accessed through `AtomicI64` (from Rust) or by aligned
// 8-byte accesses from Java; the pointer is owned by the `Ring` and freed only in `Drop`. The
// consumer state is behind a mutex. Nothing is tied to the creating thread.
unsafe impl Send for Ring {}
// SAFETY: see `Send`: every shared access is atomic or under the consumer mutex.
unsafe impl Sync for Ring {}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("thread_id", &self.thread_id)
            .field("handle", &self.handle)
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

/// `requested` rounded up to a power of two within `MIN_CAPACITY..=MAX_CAPACITY`.
pub fn effective_capacity(requested: usize) -> usize {
    requested
        .clamp(MIN_CAPACITY, MAX_CAPACITY)
        .next_power_of_two()
}

impl Ring {
    /// Allocates a zeroed ring. `capacity` is rounded up to a power of two and clamped to
    /// `MIN_CAPACITY..=MAX_CAPACITY`.
    pub fn new(capacity: usize, thread_id: u64, handle: u64) -> Ring {
        let capacity = effective_capacity(capacity);
        let bytes = HEADER_BYTES + capacity * ENTRY_BYTES;
        // The size is at most 64 + 16 MiB and the alignment a power of two: this cannot fail.
        let layout = Layout::from_size_align(bytes, ALIGN).expect("ring layout is always valid");
        // SAFETY: `layout` has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw.cast::<AtomicI64>()) else {
            alloc::handle_alloc_error(layout)
        };
        let ring = Ring {
            words: ptr,
            layout,
            capacity,
            thread_id,
            handle,
            consumer: Mutex::new(Consumer {
                tail: 0,
                poisoned: false,
            }),
        };
        // Both casts are bit-for-bit: the header stores the u64 values in i64 fields.
        ring.word(CAPACITY)
            .store(capacity as i64, Ordering::Relaxed);
        ring.word(THREAD_ID)
            .store(thread_id as i64, Ordering::Relaxed);
        ring.word(HANDLE).store(handle as i64, Ordering::Relaxed);
        ring
    }

    fn word(&self, index: usize) -> &AtomicI64 {
        debug_assert!(index < HEADER_WORDS + 2 * self.capacity);
        // SAFETY: every caller passes an index below `HEADER_WORDS + 2 * capacity` (header
        // constants, or `entry_words` which masks the slot), so the pointer stays inside the
        // allocation, which is 8-byte aligned, zero-initialised (a valid i64) and lives as long
        // as `self`. `AtomicI64` has the layout of `i64`.
        unsafe { &*self.words.as_ptr().add(index) }
    }

    fn entry_words(&self, index: u64) -> (&AtomicI64, &AtomicI64) {
        let slot = (index as usize) & (self.capacity - 1);
        let w = HEADER_WORDS + 2 * slot;
        (self.word(w), self.word(w + 1))
    }

    /// Start of the shared memory, for `NewDirectByteBuffer`.
    pub fn as_ptr(&self) -> *mut u8 {
        self.words.as_ptr().cast::<u8>()
    }

    /// Length of the shared memory in bytes: header plus entries.
    pub fn byte_len(&self) -> usize {
        self.layout.size()
    }

    /// Java thread id of the owner.
    pub fn thread_id(&self) -> u64 {
        self.thread_id
    }

    /// Registry handle, passed back by `Natives.release`.
    pub fn handle(&self) -> u64 {
        self.handle
    }

    /// Number of entries (a power of two).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Asks the producer to move to a ring of `capacity` entries (it does so at its next lap,
    /// through `Natives.grow`). Only the worker calls it.
    pub fn request_growth(&self, capacity: usize) {
        self.word(GROW).store(capacity as i64, Ordering::Relaxed);
    }

    /// The capacity asked for by [`Ring::request_growth`], 0 when none.
    pub fn growth_requested(&self) -> usize {
        self.word(GROW).load(Ordering::Relaxed).max(0) as usize
    }

    /// The context of the newest completed entry: what the owner has installed now (0 before the
    /// first transition). Tests only; the worker drains.
    pub fn current(&self) -> ContextId {
        let n = (self.word(HEAD).load(Ordering::Acquire) / 2) as u64;
        if n == 0 {
            return 0;
        }
        self.entry_words(n - 1).1.load(Ordering::Relaxed) as ContextId
    }

    /// Drains the completed entries not yet consumed into `out` (appended, oldest first), following
    /// the consumer protocol of ARCHITECTURE.md. Single consumer: concurrent calls serialise.
    ///
    /// Entries are kept only when provably intact: an entry whose slot may have been reused by a
    /// later transition (because the producer lapped the ring before or during the copy) is
    /// counted as lost instead. The overwrite bound uses `ceil(h2 / 2) - capacity` where `h2` is
    /// the re-read `head`: with an odd `h2`, transition `h2/2` is being written into the slot of
    /// entry `h2/2 - capacity`, so that entry is lost too (ARCHITECTURE.md's `n2/2 - capacity`
    /// misses it by one).
    pub fn drain(&self, out: &mut Vec<Transition>) -> DrainOutcome {
        let mut consumer = self.consumer.lock();
        let tail = consumer.tail;
        let mut outcome = DrainOutcome::at(tail);
        if consumer.poisoned {
            outcome.corrupt = true;
            return outcome;
        }
        let h1 = self.word(HEAD).load(Ordering::Acquire);
        let n = match u64::try_from(h1) {
            Ok(h1) if h1 / 2 >= tail => h1 / 2,
            _ => {
                consumer.poisoned = true;
                outcome.corrupt = true;
                return outcome;
            }
        };
        let in_flight = h1 & 1 == 1;
        let cap = self.capacity as u64;
        // Entries below `n - capacity` were overwritten before we even looked.
        let start = tail.max(n.saturating_sub(cap));
        let base = out.len();
        out.reserve((n - start) as usize);
        for index in start..n {
            let (time, context) = self.entry_words(index);
            // Relaxed: visibility comes from the acquire load of `h1`; whether the values are
            // still the ones of `index` is decided by the re-read of `head` after the fence.
            out.push(Transition {
                time_ns: time.load(Ordering::Relaxed),
                context: context.load(Ordering::Relaxed) as ContextId,
            });
        }
        // Orders the entry loads above before the re-read below (seqlock reader side).
        fence(Ordering::Acquire);
        let h2 = self.word(HEAD).load(Ordering::Relaxed);
        let h2 = match u64::try_from(h2) {
            Ok(h2) if h2 >= h1 as u64 => h2,
            _ => {
                out.truncate(base);
                consumer.poisoned = true;
                outcome.corrupt = true;
                return outcome;
            }
        };
        // First index whose slot no transition started up to `h2` can have touched.
        let intact_from = h2.div_ceil(2).saturating_sub(cap);
        let first_kept = start.max(intact_from).min(n);
        let torn = (first_kept - start) as usize;
        if torn > 0 {
            out.drain(base..base + torn);
        }
        consumer.tail = n;
        self.word(TAIL).store(n as i64, Ordering::Release);
        outcome.first_kept_index = first_kept;
        outcome.end_index = n;
        outcome.drained = (n - first_kept) as usize;
        outcome.lost = first_kept - tail;
        outcome.in_flight = in_flight;
        outcome
    }
}

#[cfg(test)]
impl Ring {
    /// Overwrites `head` as a misbehaving Java writer could.
    pub(crate) fn store_head_for_test(&self, head: i64) {
        self.word(HEAD).store(head, Ordering::Release);
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: `words` was returned by `alloc_zeroed(self.layout)` in `new` and is freed
        // exactly once, here. Whoever handed the memory to Java must keep the `Ring` alive for
        // as long as Java may touch it.
        unsafe { alloc::dealloc(self.as_ptr(), self.layout) }
    }
}

/// A Rust copy of the Java writer (ARCHITECTURE.md producer protocol plus the fence described in
/// the module docs), for tests and benchmarks. Times are supplied by the caller. One producer per
/// ring.
#[derive(Debug)]
pub struct Producer {
    ring: Arc<Ring>,
    /// Number of transitions completed.
    next: u64,
    /// Context of the transition started by `begin` and not yet finished.
    open: Option<ContextId>,
}

impl Producer {
    /// A producer continuing after the transitions already completed in `ring`.
    pub fn new(ring: Arc<Ring>) -> Producer {
        let head = ring.word(HEAD).load(Ordering::Acquire).max(0) as u64;
        Producer {
            ring,
            next: head / 2,
            open: None,
        }
    }

    /// The ring written to.
    pub fn ring(&self) -> &Arc<Ring> {
        &self.ring
    }

    /// Transitions completed so far.
    pub fn completed(&self) -> u64 {
        self.next
    }

    /// Publishes one complete transition to `context` at `time_ns`.
    pub fn push(&mut self, time_ns: i64, context: ContextId) {
        self.begin(time_ns, context);
        self.finish();
    }

    /// Starts a transition and stops half-way: `head` is odd and the entry written, but the
    /// transition is not published (as if the thread were descheduled before its last store).
    /// A transition already begun is finished first.
    pub fn begin(&mut self, time_ns: i64, context: ContextId) {
        self.begin_with(|| time_ns, context);
    }

    /// `begin` reading the time from `clock` at the point where the Java writer calls
    /// `System.nanoTime()`: after the odd `head` is visible. Returns the time written.
    pub fn begin_with(&mut self, clock: impl FnOnce() -> i64, context: ContextId) -> i64 {
        self.finish();
        let n = self.next;
        let ring = &*self.ring;
        ring.word(HEAD).store((2 * n + 1) as i64, Ordering::Release);
        // Keeps the entry writes and the clock read after the odd head.
        fence(Ordering::SeqCst);
        let time_ns = clock();
        let (time, ctx) = ring.entry_words(n);
        time.store(time_ns, Ordering::Relaxed);
        ctx.store(context as i64, Ordering::Relaxed);
        self.open = Some(context);
        time_ns
    }

    /// `push` with the time read from `clock` as the Java writer does. Returns the time written.
    pub fn push_with(&mut self, clock: impl FnOnce() -> i64, context: ContextId) -> i64 {
        let time_ns = self.begin_with(clock, context);
        self.finish();
        time_ns
    }

    /// Completes the transition started by `begin` (no-op when none is open).
    pub fn finish(&mut self) {
        if self.open.take().is_none() {
            return;
        }
        self.next += 1;
        let ring = &*self.ring;
        ring.word(HEAD)
            .store((2 * self.next) as i64, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(capacity: usize) -> Arc<Ring> {
        Arc::new(Ring::new(capacity, 7, 42))
    }

    fn drain(ring: &Ring) -> (Vec<Transition>, DrainOutcome) {
        let mut out = Vec::new();
        let o = ring.drain(&mut out);
        (out, o)
    }

    fn t(time_ns: i64, context: ContextId) -> Transition {
        Transition { time_ns, context }
    }

    fn raw_head(ring: &Ring) -> i64 {
        ring.word(HEAD).load(Ordering::Relaxed)
    }

    #[test]
    fn capacity_is_rounded_and_clamped() {
        assert_eq!(effective_capacity(0), MIN_CAPACITY);
        assert_eq!(effective_capacity(17), 32);
        assert_eq!(effective_capacity(64), 64);
        assert_eq!(effective_capacity(usize::MAX), MAX_CAPACITY);
    }

    #[test]
    fn header_layout_matches_the_contract() {
        let r = ring(100);
        assert_eq!(r.capacity(), 128);
        assert_eq!(r.byte_len(), 64 + 16 * 128);
        assert_eq!(r.as_ptr() as usize % 64, 0);
        let words = |i: usize| -> i64 {
            // SAFETY: `i` is a header word index inside the allocation; read through the atomic
            // view as every other access does.
            unsafe { (*r.as_ptr().cast::<AtomicI64>().add(i)).load(Ordering::Relaxed) }
        };
        assert_eq!(words(3), 128);
        assert_eq!(words(4), 7);
        assert_eq!(words(5), 42);
        assert_eq!(words(6), 0);
        assert_eq!(words(7), 0);
        assert_eq!((r.thread_id(), r.handle()), (7, 42));
        assert_eq!(r.current(), 0);
    }

    #[test]
    fn normal_drain_in_order_then_nothing() {
        let r = ring(16);
        let mut p = Producer::new(r.clone());
        p.push(10, 1);
        p.push(20, 2);
        p.push(30, 0);
        assert_eq!(r.current(), 0);
        let (out, o) = drain(&r);
        assert_eq!(out, vec![t(10, 1), t(20, 2), t(30, 0)]);
        assert_eq!((o.start_index, o.first_kept_index, o.end_index), (0, 0, 3));
        assert_eq!(
            (o.drained, o.lost, o.in_flight, o.corrupt),
            (3, 0, false, false)
        );
        assert_eq!(r.word(TAIL).load(Ordering::Relaxed), 3);
        let (out, o) = drain(&r);
        assert!(out.is_empty());
        assert_eq!(o, DrainOutcome::at(3));
    }

    #[test]
    fn drain_appends_to_existing_output() {
        let r = ring(16);
        let mut p = Producer::new(r.clone());
        p.push(5, 9);
        let mut out = vec![t(1, 1)];
        let o = r.drain(&mut out);
        assert_eq!(out, vec![t(1, 1), t(5, 9)]);
        assert_eq!(o.drained, 1);
    }

    #[test]
    fn wrap_around_without_loss() {
        let r = ring(16);
        let mut p = Producer::new(r.clone());
        let mut all = Vec::new();
        for i in 0..100i64 {
            p.push(i, i as u64 + 1);
            if i % 10 == 9 {
                let (out, o) = drain(&r);
                assert_eq!(o.lost, 0);
                all.extend(out);
            }
        }
        let expected: Vec<_> = (0..100i64).map(|i| t(i, i as u64 + 1)).collect();
        assert_eq!(all, expected);
    }

    #[test]
    fn overflow_keeps_the_newest_capacity_entries() {
        let r = ring(16);
        let mut p = Producer::new(r.clone());
        p.push(1, 1);
        let (_, o) = drain(&r);
        assert_eq!(o.end_index, 1);
        for i in 1..41i64 {
            p.push(i * 10, i as u64);
        }
        let (out, o) = drain(&r);
        // 40 new entries, 16 survive: indices 25..41.
        assert_eq!(
            (o.start_index, o.first_kept_index, o.end_index),
            (1, 25, 41)
        );
        assert_eq!((o.lost, o.drained), (24, 16));
        let expected: Vec<_> = (25..41i64).map(|i| t(i * 10, i as u64)).collect();
        assert_eq!(out, expected);
    }

    #[test]
    fn in_flight_entry_is_not_drained_and_its_slot_owner_is_lost() {
        let r = ring(16);
        let mut p = Producer::new(r.clone());
        for i in 0..16i64 {
            p.push(i, 1);
        }
        p.begin(100, 5);
        assert_eq!(raw_head(&r), 33);
        let (out, o) = drain(&r);
        assert!(o.in_flight);
        // Entry 0 shares its slot with the in-flight entry 16: it may be torn, so it is lost.
        assert_eq!((o.first_kept_index, o.end_index, o.lost), (1, 16, 1));
        assert_eq!(out.len(), 15);
        assert_eq!(out[0], t(1, 1));
        assert_eq!(r.current(), 1);
        p.finish();
        assert_eq!(r.current(), 5);
        let (out, o) = drain(&r);
        assert!(!o.in_flight);
        assert_eq!(out, vec![t(100, 5)]);
    }

    #[test]
    fn in_flight_without_lap_loses_nothing() {
        let r = ring(16);
        let mut p = Producer::new(r.clone());
        p.push(1, 1);
        p.begin(2, 2);
        let (out, o) = drain(&r);
        assert!(o.in_flight);
        assert_eq!(out, vec![t(1, 1)]);
        assert_eq!(o.lost, 0);
    }

    #[test]
    fn producer_resumes_after_existing_entries() {
        let r = ring(16);
        Producer::new(r.clone()).push(1, 1);
        let mut p = Producer::new(r.clone());
        assert_eq!(p.completed(), 1);
        p.push(2, 2);
        let (out, _) = drain(&r);
        assert_eq!(out, vec![t(1, 1), t(2, 2)]);
    }

    #[test]
    fn corrupt_head_poisons_the_ring() {
        let r = ring(16);
        let mut p = Producer::new(r.clone());
        p.push(1, 1);
        p.push(2, 2);
        drain(&r);
        r.word(HEAD).store(2, Ordering::Relaxed); // moved backwards
        let (out, o) = drain(&r);
        assert!(out.is_empty());
        assert!(o.corrupt);
        r.word(HEAD).store(100, Ordering::Relaxed);
        let (out, o) = drain(&r);
        assert!(out.is_empty());
        assert!(o.corrupt);

        let r = ring(16);
        r.word(HEAD).store(-4, Ordering::Relaxed);
        let (out, o) = drain(&r);
        assert!(out.is_empty() && o.corrupt);
    }

    #[test]
    fn huge_head_jump_is_bounded_by_capacity() {
        let r = ring(16);
        r.word(HEAD).store(i64::MAX - 1, Ordering::Relaxed);
        let (out, o) = drain(&r);
        assert_eq!(out.len(), 16);
        assert_eq!(o.lost, (i64::MAX as u64 - 1) / 2 - 16);
        assert!(!o.corrupt);
    }

    /// A producer thread laps a small ring while the consumer drains concurrently. Entry `i` has
    /// time `i + 1` and context `(i + 1) * 3`, so any torn or misplaced entry is detected.
    /// `pace` spins after each transition slow the producer so that most entries survive.
    fn stress(capacity: usize, transitions: u64, pace: u32) -> (u64, u64) {
        let r = ring(capacity);
        let producer = {
            let r = r.clone();
            std::thread::spawn(move || {
                let mut p = Producer::new(r);
                for i in 0..transitions {
                    let time = i as i64 + 1;
                    if i % 64 == 0 {
                        // Leave an entry in flight for a moment now and then.
                        p.begin(time, (time * 3) as u64);
                        std::hint::spin_loop();
                        p.finish();
                    } else {
                        p.push(time, (time * 3) as u64);
                    }
                    for _ in 0..pace {
                        std::hint::spin_loop();
                    }
                }
            })
        };
        let mut expected_next = 0u64;
        let (mut drained, mut lost, mut lost_stretches) = (0u64, 0u64, 0u64);
        let mut out = Vec::new();
        let mut last_time = 0i64;
        loop {
            let finished = producer.is_finished();
            out.clear();
            let o = r.drain(&mut out);
            assert!(!o.corrupt);
            assert_eq!(o.start_index, expected_next, "drains are contiguous");
            assert_eq!(o.first_kept_index - o.start_index, o.lost);
            assert_eq!(o.end_index - o.first_kept_index, o.drained as u64);
            for (k, tr) in out.iter().enumerate() {
                let index = o.first_kept_index + k as u64;
                assert_eq!(tr.time_ns, index as i64 + 1, "entry {index} misplaced");
                assert_eq!(tr.context, tr.time_ns as u64 * 3, "entry {index} torn");
                assert!(tr.time_ns > last_time, "strictly increasing");
                last_time = tr.time_ns;
            }
            drained += o.drained as u64;
            lost += o.lost;
            if o.lost > 0 {
                lost_stretches += 1;
            }
            expected_next = o.end_index;
            if finished && expected_next == transitions {
                break;
            }
        }
        producer.join().expect("producer thread");
        assert_eq!(drained + lost, transitions);
        assert_eq!(lost > 0, lost_stretches > 0);
        (drained, lost)
    }

    #[test]
    fn concurrent_producer_laps_a_small_ring() {
        stress(16, 1_000_000, 0);
    }

    #[test]
    fn concurrent_paced_producer_small_ring() {
        stress(16, 100_000, 200);
    }

    #[test]
    fn concurrent_producer_large_ring() {
        stress(4096, 300_000, 20);
    }
}
