//! Ring memory: its layout and allocation, the pool of blocks pooled rings reuse, and the test
//! hook that guards a dropped ring's memory (`JFRCTX_TEST_RING_GUARD`).

use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::slab::{release_pages, Slabs};
use super::{effective_capacity, ALIGN, ENTRY_BYTES, HEADER_BYTES};

/// Ring memory of one size kept for reuse: a pooled ring's memory (a spare's, or a registered
/// ring's of this capacity, see `Ring::pooled`) goes back here when the ring is dropped (after
/// the worker's last drain, when no writer can touch it any more), and the next pooled ring
/// takes it instead of mapping and zeroing a new one. A thread-per-request server thus
/// cycles through a few blocks instead of a 16 KiB allocation (with its page faults) per request.
/// Blocks are carved side by side from huge-page slabs ([`Slabs`]); a block freed while
/// `keep` others are free gives its whole pages back to the system (it stays on the list, and
/// its pages come back zeroed when it is used again).
#[derive(Debug)]
pub struct Blocks {
    pub(super) capacity: usize,
    pub(super) layout: Layout,
    pub(super) free: Mutex<Vec<Block>>,
    /// Free blocks kept resident at most; the pages of more are given back.
    pub(super) keep: usize,
    slabs: Mutex<Slabs>,
}

/// Memory of a dropped pooled ring, owned by [`Blocks`].
#[derive(Debug)]
pub(super) struct Block(pub(super) NonNull<AtomicI64>);

// SAFETY: a free block is memory nobody else refers to (its ring was dropped); it moves between
// threads only through the `Blocks` mutex.
unsafe impl Send for Block {}

impl Blocks {
    /// Blocks for rings of `capacity` entries (rounded as [`super::Ring::new`] does), at most
    /// `keep` kept free.
    pub fn new(capacity: usize, keep: usize) -> Arc<Blocks> {
        let capacity = effective_capacity(capacity);
        Arc::new(Blocks {
            capacity,
            layout: layout_for(capacity),
            free: Mutex::new(Vec::new()),
            keep,
            slabs: Mutex::new(Slabs::default()),
        })
    }

    /// Memory for a pooled ring: a free block, else a new one carved from the slabs (zeroed).
    pub(super) fn take(&self) -> NonNull<AtomicI64> {
        if let Some(b) = self.free.lock().pop() {
            return b.0;
        }
        match self.slabs.lock().carve(self.stride()) {
            Some(block) => block.cast(),
            None => alloc::handle_alloc_error(self.layout),
        }
    }

    /// Takes back the memory of a dropped pooled ring (from [`Blocks::take`]), which nobody
    /// reads or writes any more.
    pub(super) fn give_back(&self, block: Block) {
        let mut free = self.free.lock();
        if free.len() < self.keep {
            free.push(block); // the usual case: one lock
            return;
        }
        drop(free); // no system call under the lock `take` needs
        release_pages(block.0.cast(), self.stride());
        self.free.lock().push(block);
    }

    /// Bytes between the starts of two blocks carved one after the other.
    fn stride(&self) -> usize {
        self.layout.size().next_multiple_of(ALIGN)
    }

    /// Bytes of the slabs carved from so far.
    pub fn slab_bytes(&self) -> usize {
        self.slabs.lock().bytes()
    }

    /// Entries of each ring.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Blocks free for reuse now.
    pub fn free(&self) -> usize {
        self.free.lock().len()
    }
}

/// Test hook (`JFRCTX_TEST_RING_GUARD`, set by the runtime before any ring exists): what takes a
/// dropped ring's memory instead of the allocator and the pool. The runtime's hook makes
/// it inaccessible and never frees it, so that a write into a ring the agent has let go of
/// crashes the JVM at the write (a stack naming the writer) instead of corrupting the heap
/// silently. Rings are then page-aligned and whole pages.
pub(super) static FREED_RING_HOOK: OnceLock<fn(*mut u8, usize)> = OnceLock::new();

/// Installs the test hook described at [`FREED_RING_HOOK`]; false when one was already set.
pub fn guard_freed_rings(hook: fn(*mut u8, usize)) -> bool {
    FREED_RING_HOOK.set(hook).is_ok()
}

/// Page size assumed by the guard's layout (what x86-64 and most aarch64 Linux use; a larger
/// page only leaves the guard partial).
const GUARD_PAGE: usize = 4096;

pub(super) fn layout_for(capacity: usize) -> Layout {
    let bytes = HEADER_BYTES + capacity * ENTRY_BYTES;
    let (bytes, align) = if FREED_RING_HOOK.get().is_some() {
        (bytes.div_ceil(GUARD_PAGE) * GUARD_PAGE, GUARD_PAGE)
    } else {
        (bytes, ALIGN)
    };
    // The size is at most 64 + 16 MiB and the alignment a power of two: this cannot fail.
    Layout::from_size_align(bytes, align).expect("ring layout is always valid")
}

pub(super) fn alloc_zeroed_words(layout: Layout) -> NonNull<AtomicI64> {
    // SAFETY: `layout` has a non-zero size.
    let raw = unsafe { alloc::alloc_zeroed(layout) };
    let Some(ptr) = NonNull::new(raw.cast::<AtomicI64>()) else {
        alloc::handle_alloc_error(layout)
    };
    ptr
}
