//! Pooled ring memory on 2 MiB pages: blocks carved side by side from 2 MiB-aligned mappings
//! that the runtime's [`PageSource`] makes and advises as huge pages, unmapped only with their
//! pool.
//!
//! Why: a fresh thread's first context touches its ring's header, memory nobody on its core
//! touched lately. In a busy server that touch cost ≈ 300 ns on a KVM guest, about half of it
//! the two-dimensional walk of a 4 KiB page's translation; on 2 MiB pages one TLB entry covers
//! about 127 rings of the default size (bench/README.md, "A first context timed inside the
//! server"). Without a page source (unit tests that install none) slabs come from the Rust
//! allocator: the same carving, on whatever pages it gives.

use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::sync::OnceLock;

/// Bytes of one huge page: the alignment and unit of every slab.
pub const SLAB_BYTES: usize = 2 << 20;

/// The system's side of the slabs, installed by the runtime ([`use_page_source`]).
#[derive(Debug)]
pub struct PageSource {
    /// A zeroed mapping of `len` bytes (a multiple of [`SLAB_BYTES`]) at a
    /// [`SLAB_BYTES`]-aligned address, advised as huge pages; `None` when the system has none.
    pub map: fn(usize) -> Option<NonNull<u8>>,
    /// Unmaps what `map` returned, with its length.
    pub unmap: fn(NonNull<u8>, usize),
    /// Gives the whole pages inside the range back to the system (they read as zero after).
    pub release: fn(NonNull<u8>, usize),
}

static PAGE_SOURCE: OnceLock<PageSource> = OnceLock::new();

/// Installs the page source; false when one was already installed (the first stays).
pub fn use_page_source(source: PageSource) -> bool {
    PAGE_SOURCE.set(source).is_ok()
}

/// One slab: where it came from decides how it goes.
#[derive(Debug)]
struct Slab {
    base: NonNull<u8>,
    len: usize,
    mapped: bool,
}

/// The slabs of one pool and the unused rest of the newest.
#[derive(Debug, Default)]
pub(super) struct Slabs {
    all: Vec<Slab>,
    next: usize,
    end: usize,
}

// SAFETY: the slabs are memory owned by their pool alone; they move between threads only with
// it (under its mutex).
unsafe impl Send for Slabs {}

impl Slabs {
    /// A zeroed block of `stride` bytes (a multiple of 64: blocks stay 64-byte aligned), right
    /// after the previous one; `None` when no memory is to be had.
    pub(super) fn carve(&mut self, stride: usize) -> Option<NonNull<u8>> {
        if self.end - self.next < stride {
            let len = stride.div_ceil(SLAB_BYTES) * SLAB_BYTES;
            let slab = match PAGE_SOURCE.get() {
                Some(source) => Slab {
                    base: (source.map)(len)?,
                    len,
                    mapped: true,
                },
                None => Slab {
                    base: NonNull::new(
                        // SAFETY: `len` is not zero.
                        unsafe { alloc::alloc_zeroed(Self::layout(len)) },
                    )?,
                    len,
                    mapped: false,
                },
            };
            self.next = slab.base.as_ptr() as usize;
            self.end = self.next + len;
            self.all.push(slab);
        }
        let block = self.next;
        self.next += stride;
        NonNull::new(block as *mut u8)
    }

    /// Bytes of slabs so far.
    pub(super) fn bytes(&self) -> usize {
        self.all.iter().map(|s| s.len).sum()
    }

    fn layout(len: usize) -> Layout {
        Layout::from_size_align(len, 64).expect("a slab's layout is valid")
    }
}

impl Drop for Slabs {
    fn drop(&mut self) {
        for s in &self.all {
            if s.mapped {
                if let Some(source) = PAGE_SOURCE.get() {
                    (source.unmap)(s.base, s.len);
                }
            } else {
                // SAFETY: allocated in `carve` with this layout; the pool owning these slabs is
                // dropped only after every ring carved from them (each ring holds the pool).
                unsafe { alloc::dealloc(s.base.as_ptr(), Self::layout(s.len)) }
            }
        }
    }
}

/// Gives the whole pages of a free block back to the system, where a page source is installed.
pub(super) fn release_pages(block: NonNull<u8>, len: usize) {
    if let Some(source) = PAGE_SOURCE.get() {
        (source.release)(block, len);
    }
}
