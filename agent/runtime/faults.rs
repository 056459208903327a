//! Panics never cross FFI: every entry point and thread catches them. The panic hook keeps the
//! last panic's message for the catch site's one `jfrctx:` line; `JFRCTX_TEST_PANIC` arms panic
//! points for the fault tests, `JFRCTX_TEST_RING_GUARD` makes a dropped ring's memory inaccessible
//! for the ring-lifetime test.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU8, Ordering};

thread_local! {
    /// Message and location of the last panic on this thread, set by the panic hook.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Replaces std's multi-line panic report by a note kept for the catch site, which logs it on
/// its one `jfrctx:` line (every agent entry point and thread catches panics). The hook belongs
/// to this library's own copy of std, so other native code in the process is not affected.
pub(super) fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let _ = LAST_PANIC.try_with(|p| *p.borrow_mut() = Some(format!("panic{at}: {msg}")));
    }));
}

/// The last panic on this thread (see [`install_panic_hook`]), for a catch site's log line.
pub fn take_panic() -> String {
    LAST_PANIC
        .try_with(|p| p.borrow_mut().take())
        .ok()
        .flatten()
        .unwrap_or_else(|| "panic".into())
}

// ---- test hook -----------------------------------------------------------------------------------
//
// `JFRCTX_TEST_PANIC=intern|deliver|worker|define` (several: comma-separated), read once by `load`,
// is a hook for the fault tests (tests/it/faults.rs) and nothing else: the named path panics once —
// `intern` in `Natives.intern`, `deliver` in `Natives.deliver`, `worker` in a worker round,
// `define` where the worker records a map the facade numbered itself — so
// that the tests can check the JVM survives a panic there. Unset, it costs one relaxed load on
// those paths.

pub(super) const PANIC_INTERN: u8 = 1;
pub(super) const PANIC_DELIVER: u8 = 2;
pub(super) const PANIC_WORKER: u8 = 4;
pub(super) const PANIC_DEFINE: u8 = 8;
const PANIC_POINTS: [(&str, u8); 4] = [
    ("intern", PANIC_INTERN),
    ("deliver", PANIC_DELIVER),
    ("worker", PANIC_WORKER),
    ("define", PANIC_DEFINE),
];

/// The panic points still armed.
pub(super) static TEST_PANIC: AtomicU8 = AtomicU8::new(0);

pub(super) fn parse_test_panic(value: &str) -> Result<u8, String> {
    let mut bits = 0;
    for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let Some((_, bit)) = PANIC_POINTS.iter().find(|(n, _)| *n == item) else {
            return Err(format!(
                "unknown point '{item}' (known: intern, deliver, worker, define)"
            ));
        };
        bits |= bit;
    }
    Ok(bits)
}

/// Panics once if the test hook armed `point`.
pub(super) fn test_panic(point: u8) {
    if TEST_PANIC.load(Ordering::Relaxed) & point != 0
        && TEST_PANIC.fetch_and(!point, Ordering::AcqRel) & point != 0
    {
        // Literal messages: a `&'static str` payload is what every catch site can print.
        match point {
            PANIC_INTERN => panic!("JFRCTX_TEST_PANIC=intern"),
            PANIC_DELIVER => panic!("JFRCTX_TEST_PANIC=deliver"),
            PANIC_DEFINE => panic!("JFRCTX_TEST_PANIC=define"),
            _ => panic!("JFRCTX_TEST_PANIC=worker"),
        }
    }
}

// `JFRCTX_TEST_RING_GUARD` (any value), read once by `load`, is a hook for the ring-lifetime test
// (tests/it/spare_rings.rs) and nothing else: a ring's memory is never freed or reused but made
// inaccessible when the agent drops the ring, so that a Java writer still using it crashes the JVM
// at that write instead of corrupting the heap (`ring::guard_freed_rings`).

/// The ring guard's hook: `len` bytes at `ptr` (page-aligned, whole pages under the guard) are
/// made inaccessible and left allocated.
#[allow(unsafe_code)] // FFI: mprotect
pub(super) fn guard_ring(ptr: *mut u8, len: usize) {
    // Under the guard every ring is allocated page-aligned in whole pages (`ring::layout_for`)
    // and never freed, so no other allocation shares them; nothing touches a dropped ring.
    // SAFETY: the range is exactly the dropped ring's own pages, as the comment above says.
    let rc = unsafe {
        // Its pages back to the kernel first (a guarded ring costs address space, not memory).
        libc::madvise(ptr.cast(), len, libc::MADV_DONTNEED);
        libc::mprotect(ptr.cast(), len, libc::PROT_NONE)
    };
    if rc != 0 {
        crate::warn!(
            "JFRCTX_TEST_RING_GUARD: mprotect failed ({})",
            std::io::Error::last_os_error()
        );
    }
}

#[cfg(test)]
mod fault_hook_tests {
    use super::*;

    #[test]
    fn test_panic_points_parse() {
        assert_eq!(parse_test_panic(""), Ok(0));
        assert_eq!(parse_test_panic("worker"), Ok(PANIC_WORKER));
        assert_eq!(
            parse_test_panic("intern, deliver"),
            Ok(PANIC_INTERN | PANIC_DELIVER)
        );
        assert!(parse_test_panic("everywhere")
            .unwrap_err()
            .contains("everywhere"));
    }

    #[test]
    fn an_armed_point_panics_once_with_its_name() {
        TEST_PANIC.fetch_or(PANIC_DELIVER, Ordering::AcqRel);
        let first = std::panic::catch_unwind(|| test_panic(PANIC_DELIVER));
        let msg = first.unwrap_err();
        assert_eq!(
            msg.downcast_ref::<&str>().copied(),
            Some("JFRCTX_TEST_PANIC=deliver")
        );
        test_panic(PANIC_DELIVER);
        test_panic(PANIC_WORKER);
    }
}
