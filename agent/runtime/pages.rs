//! The system's side of the ring pools' slabs (`core::context::ring::PageSource`): anonymous
//! mappings aligned to 2 MiB and advised as transparent huge pages, and the release of a free
//! block's pages. Installed at load, before any ring exists.

use std::ptr::NonNull;

use crate::core::context::ring::{PageSource, SLAB_BYTES};

/// What `load` installs.
pub const SOURCE: PageSource = PageSource {
    map,
    unmap,
    release,
};

#[allow(unsafe_code)] // FFI: mmap, munmap, madvise
fn map(len: usize) -> Option<NonNull<u8>> {
    let over = len + SLAB_BYTES;
    // SAFETY: a new private anonymous mapping: no file and no existing memory are involved.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            over,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return None;
    }
    let raw = raw as usize;
    let base = raw.next_multiple_of(SLAB_BYTES);
    // SAFETY: the head [raw, base) and the tail [base + len, raw + over) lie inside the mapping
    // just made, and nothing refers to them.
    unsafe {
        if base > raw {
            libc::munmap(raw as *mut libc::c_void, base - raw);
        }
        if raw + over > base + len {
            libc::munmap((base + len) as *mut libc::c_void, raw + over - (base + len));
        }
    }
    // SAFETY: advice on the mapping just made; an error (no transparent huge pages) leaves it on
    // small pages, which is only slower.
    unsafe { libc::madvise(base as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
    NonNull::new(base as *mut u8)
}

#[allow(unsafe_code)] // FFI: mmap, munmap, madvise
fn unmap(base: NonNull<u8>, len: usize) {
    // SAFETY: a mapping `map` made, of this length, that its pool no longer uses.
    unsafe { libc::munmap(base.as_ptr().cast(), len) };
}

#[allow(unsafe_code)] // FFI: mmap, munmap, madvise
fn release(block: NonNull<u8>, len: usize) {
    // SAFETY: sysconf reads a constant of the system.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    let start = (block.as_ptr() as usize).next_multiple_of(page);
    let end = (block.as_ptr() as usize + len) / page * page;
    if end > start {
        // SAFETY: whole pages of a free block of a live mapping, which nobody reads or writes
        // until its pool hands the block out again; private anonymous pages come back zeroed.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
    }
}

/// The ring pools on the system's pages: core's carving and reuse over this page source.
#[cfg(test)]
mod tests {
    use super::SOURCE;
    use crate::core::context::ring::{
        use_page_source, Blocks, Producer, Ring, ENTRY_BYTES, HEADER_BYTES,
    };
    use std::sync::Arc;

    #[test]
    #[allow(unsafe_code)] // reads a free block's memory: were its pages given back?
    fn blocks_beyond_the_kept_number_give_their_pages_back() {
        use_page_source(SOURCE);
        // 1 024 entries: 16 KiB + 64 B, so a block holds whole pages of its own.
        let blocks = Blocks::new(1024, 1);
        let a = Ring::spare(&blocks, 1);
        let b = Arc::new(Ring::spare(&blocks, 2));
        let (a_at, b_at) = (a.as_ptr(), b.as_ptr());
        let mut p = Producer::new(Arc::clone(&b));
        for i in 0..1024 {
            p.push(i + 1, 9); // every entry of b non-zero
        }
        drop(p);
        let b_entry = b_at.wrapping_add(HEADER_BYTES + 512 * ENTRY_BYTES) as *const i64;
        // SAFETY: inside b's live memory; nobody writes it now.
        assert_ne!(unsafe { b_entry.read_volatile() }, 0);
        drop(a);
        assert_eq!(blocks.free(), 1, "a is kept resident");
        drop(b);
        assert_eq!(blocks.free(), 2, "b stays on the list");
        // SAFETY: b's memory is a free block of a live pool: still mapped, and nobody writes it.
        let after = unsafe { b_entry.read_volatile() };
        assert_eq!(
            after, 0,
            "b's whole pages were given back, and read as zero"
        );
        let again = Ring::spare(&blocks, 3);
        assert_eq!(again.as_ptr(), b_at, "the pool reuses the last freed first");
        assert_ne!(again.as_ptr(), a_at);
        let plain = Ring::new(16, 1, 4);
        assert!(!plain.is_pooled());
    }

    #[test]
    fn pooled_blocks_are_carved_side_by_side_from_huge_page_aligned_mappings() {
        use_page_source(SOURCE);
        let blocks = Blocks::new(1024, 4);
        let rings: Vec<Ring> = (0..3).map(|h| Ring::spare(&blocks, h)).collect();
        let stride = (HEADER_BYTES + 1024 * ENTRY_BYTES).next_multiple_of(64);
        assert_eq!(
            (rings[0].as_ptr() as usize) % (2 << 20),
            0,
            "the first at a 2 MiB boundary"
        );
        for w in rings.windows(2) {
            assert_eq!(w[1].as_ptr() as usize - w[0].as_ptr() as usize, stride);
        }
        assert_eq!(blocks.slab_bytes(), 2 << 20);
        // A ring bigger than a huge page gets a mapping of its own, in whole huge pages.
        let big = Blocks::new(1 << 18, 1);
        let r = Ring::spare(&big, 1);
        assert_eq!((r.as_ptr() as usize) % (2 << 20), 0);
        assert_eq!(
            big.slab_bytes(),
            6 << 20,
            "4 MiB + 64 B of ring: three huge pages"
        );
    }
}
