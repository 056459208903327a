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
