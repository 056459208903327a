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
//!   (plain/relaxed); `head.store(2n+2, Release)`. (Header word 2, once `current`, is now the
//!   spare's `claim`; [`Ring::current`] reads the newest entry instead.)
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
use std::sync::atomic::{fence, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::core::model::ContextId;

mod memory;
mod slab;
use memory::{alloc_zeroed_words, layout_for, Block, FREED_RING_HOOK};
pub use memory::{guard_freed_rings, Blocks};
pub use slab::{use_page_source, PageSource, SLAB_BYTES};

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
/// Header word 2: `t + 1` once Java thread `t` took this ring as a spare (see [`Ring::spare`]),
/// 0 before (and always 0 on a ring registered through `Natives.register`). Written once by the
/// producer (release) before its first transition.
const CLAIM: usize = 2;
const CAPACITY: usize = 3;
const THREAD_ID: usize = 4;
const HANDLE: usize = 5;
/// Header word 6, the producer's attention word, written by the worker only and read by the
/// producer at each half lap: its low 32 bits a capacity the agent asks the producer to move to
/// (0: none), see [`Ring::request_growth`]; bit [`WAKE_HINT`] set while the worker sleeps long.
const GROW: usize = 6;
/// Bit of header word 6 set by the worker while it sleeps longer than its drain interval (every
/// ring idle): the producer then wakes it at its next half lap (`Natives.wake`), see
/// [`Ring::hint_wake`].
pub const WAKE_HINT: i64 = 1 << 62;
/// The capacity bits of header word 6.
const GROW_CAPACITY: i64 = 0xFFFF_FFFF;
/// Rings grow on request up to this many entries (1 MiB): at 1 M transitions a second, 65 ms of a
/// descheduled worker.
pub const MAX_GROWN_CAPACITY: usize = 1 << 16;
/// Header word 7: how many times the producer handed the ring back (a virtual thread whose
/// outermost context closed), see [`Ring::retired`]. Producer-only, never decreases.
const RETIRED: usize = 7;
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
    /// The owner; for a spare, 0 until [`Ring::bind`] (once it was claimed).
    thread_id: AtomicU64,
    handle: u64,
    consumer: Mutex<Consumer>,
    /// Where the memory goes when the ring is dropped (a spare's), instead of the allocator.
    blocks: Option<Arc<Blocks>>,
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
            .field("thread_id", &self.thread_id())
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
        let layout = layout_for(capacity);
        Ring::with_memory(
            alloc_zeroed_words(layout),
            layout,
            capacity,
            thread_id,
            handle,
            None,
        )
    }

    /// A spare: a ring not yet bound to a thread (thread id 0, `claim` 0), in memory taken from
    /// `blocks` (or newly allocated), whose memory goes back to `blocks` when it is dropped. A Java
    /// thread takes it without a JNI call and claims it by writing its id into the header with its
    /// first transition (`RingWriter.claimFirst`); the agent then [`Ring::bind`]s it (see
    /// `RingRegistry::adopt_claims`).
    pub fn spare(blocks: &Arc<Blocks>, handle: u64) -> Ring {
        Ring::pooled(blocks, 0, handle)
    }

    /// Thread `thread_id`'s ring (0: a spare, see [`Ring::spare`]) of `blocks`' capacity, in
    /// memory taken from `blocks` (or newly allocated) instead of a zeroed allocation, going
    /// back to `blocks` when it is dropped: a thread-per-request server cycles through a few
    /// blocks instead of allocating and zeroing a ring per request.
    pub fn pooled(blocks: &Arc<Blocks>, thread_id: u64, handle: u64) -> Ring {
        // Under the guard hook no memory is reused (a dropped ring's memory is never handed
        // out), and rings are whole pages of their own: allocated, not carved.
        let words = if FREED_RING_HOOK.get().is_some() {
            alloc_zeroed_words(blocks.layout)
        } else {
            blocks.take()
        };
        let ring = Ring::with_memory(
            words,
            blocks.layout,
            blocks.capacity,
            thread_id,
            handle,
            Some(Arc::clone(blocks)),
        );
        // A reused block still holds its last owner's header: every word is reset. Its entries
        // are not: nothing reads an entry at or beyond `head`, which starts at 0 again.
        for w in [HEAD, TAIL, CLAIM, GROW, RETIRED] {
            ring.word(w).store(0, Ordering::Relaxed);
        }
        ring
    }

    fn with_memory(
        words: NonNull<AtomicI64>,
        layout: Layout,
        capacity: usize,
        thread_id: u64,
        handle: u64,
        blocks: Option<Arc<Blocks>>,
    ) -> Ring {
        let ring = Ring {
            words,
            layout,
            capacity,
            thread_id: AtomicU64::new(thread_id),
            handle,
            consumer: Mutex::new(Consumer {
                tail: 0,
                poisoned: false,
            }),
            blocks,
        };
        // Both casts are bit-for-bit: the header stores the u64 values in i64 fields.
        ring.word(CAPACITY)
            .store(capacity as i64, Ordering::Relaxed);
        ring.word(THREAD_ID)
            .store(thread_id as i64, Ordering::Relaxed);
        ring.word(HANDLE).store(handle as i64, Ordering::Relaxed);
        ring
    }

    /// The Java thread that claimed this spare (`claim` word), `None` while nobody has. Acquire:
    /// what the claimer wrote before its claim is visible after a `Some`.
    pub fn claimed_by(&self) -> Option<u64> {
        let c = self.word(CLAIM).load(Ordering::Acquire);
        (c > 0).then(|| (c - 1) as u64)
    }

    /// The producer side of a claim (tests and benchmarks; Java's `RingWriter.claimFirst` is the
    /// real claimer).
    pub fn claim(&self, thread_id: u64) {
        self.word(CLAIM)
            .store(thread_id as i64 + 1, Ordering::Release);
    }

    /// Makes a claimed spare `thread_id`'s ring (before the worker sees it).
    pub fn bind(&self, thread_id: u64) {
        self.thread_id.store(thread_id, Ordering::Relaxed);
        self.word(THREAD_ID)
            .store(thread_id as i64, Ordering::Relaxed);
    }

    /// Whether this ring's memory goes back to a pool of blocks when it is dropped (a spare's,
    /// or a registered ring of the pool's capacity; see [`Ring::pooled`]).
    pub fn is_pooled(&self) -> bool {
        self.blocks.is_some()
    }

    fn word(&self, index: usize) -> &AtomicI64 {
        debug_assert!(index < HEADER_WORDS + 2 * self.capacity);
        // Every caller passes an index below `HEADER_WORDS + 2 * capacity` (header constants, or
        // `entry_words`, which masks the slot). `AtomicI64` has the layout of `i64`.
        // SAFETY: so the pointer stays inside the allocation, which is 8-byte aligned,
        // zero-initialised (a valid i64) and lives as long as `self`.
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
        self.thread_id.load(Ordering::Relaxed)
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
    /// through `Natives.grow`). Only the worker calls it, at its drains, or on a spare before it
    /// is published (one smaller than `ring=`, see `Shared::adopt_and_top_up`).
    pub fn request_growth(&self, capacity: usize) {
        let word = self.word(GROW);
        let hint = word.load(Ordering::Relaxed) & WAKE_HINT;
        word.store(hint | (capacity as i64 & GROW_CAPACITY), Ordering::Relaxed);
    }

    /// Withdraws a growth request that cannot be met (the ring has several holders), so that
    /// the producer does not ask again at every lap; keeps [`WAKE_HINT`]. It runs on the
    /// producer's thread (in `Natives.grow`), so an atomic read-modify-write; the worker's own
    /// load-then-store of the hint may still put the request back, which costs one more refused
    /// call at the next lap.
    pub fn withdraw_growth(&self) {
        self.word(GROW).fetch_and(!GROW_CAPACITY, Ordering::Relaxed);
    }

    /// The capacity asked for by [`Ring::request_growth`], 0 when none.
    pub fn growth_requested(&self) -> usize {
        (self.word(GROW).load(Ordering::Relaxed) & GROW_CAPACITY) as usize
    }

    /// Whether [`WAKE_HINT`] is set.
    pub fn wake_hinted(&self) -> bool {
        self.word(GROW).load(Ordering::Relaxed) & WAKE_HINT != 0
    }

    /// Sets or clears [`WAKE_HINT`] (a store only when it changes: the header's line is the
    /// producer's). Only the worker calls it, at its drains.
    pub fn hint_wake(&self, on: bool) {
        let word = self.word(GROW);
        let was = word.load(Ordering::Relaxed);
        if (was & WAKE_HINT != 0) != on {
            word.store(
                if on {
                    was | WAKE_HINT
                } else {
                    was & !WAKE_HINT
                },
                Ordering::Relaxed,
            );
        }
    }

    /// How many times the producer handed this ring back by writing the header (instead of a
    /// `Natives.release` call): each time, one holder is gone, after its last transition. Read it
    /// *before* draining: the producer stores it (release) after that transition's `head`.
    pub fn retired(&self) -> u64 {
        self.word(RETIRED).load(Ordering::Acquire).max(0) as u64
    }

    /// The producer side of [`Ring::retired`] (tests and benchmarks; Java's `ThreadLog.retire`
    /// is the real producer).
    pub fn retire(&self) {
        let n = self.word(RETIRED).load(Ordering::Relaxed);
        self.word(RETIRED).store(n + 1, Ordering::Release);
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
        if h1 >= 0 && h1 & 1 == 0 && (h1 / 2) as u64 == tail {
            // Nothing new and nothing in flight: the usual case of an idle thread. Reads one
            // shared word and writes none (no fence, no `tail` store), so visiting thousands of
            // idle rings per round costs one load each.
            return outcome;
        }
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
        if let Some(hook) = FREED_RING_HOOK.get() {
            hook(self.as_ptr(), self.layout.size());
            return;
        }
        if let Some(blocks) = &self.blocks {
            // The memory outlives the ring in the pool, for the next pooled ring: the same rule
            // as freeing it (nobody writes a dropped ring) makes reusing it safe.
            blocks.give_back(Block(self.words));
            return;
        }
        // `words` came from `alloc_zeroed(self.layout)` in `new` (a pooled ring's memory went
        // back to its pool above, or to the guard hook).
        // Whoever handed the memory to Java keeps the `Ring` alive while Java may touch it.
        // SAFETY: so this frees memory of this layout, exactly once, that nobody uses any more.
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
mod tests;
