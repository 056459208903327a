//! The agent's one monotonic clock: `CLOCK_MONOTONIC` in nanoseconds, the clock behind
//! `System.nanoTime()` on Linux. The join compares it with calibrated JFR sample times, the
//! worker paces itself with it, the sinks rotate by it and the push sink's retry policy waits on
//! it. Imports nothing of the crate.

/// `CLOCK_MONOTONIC` in nanoseconds (the `System.nanoTime()` scale).
pub fn monotonic_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

#[cfg(test)]
mod tests {
    #[test]
    fn monotonic_never_goes_back() {
        let a = super::monotonic_ns();
        let b = super::monotonic_ns();
        assert!(a > 0 && b >= a, "{a} then {b}");
    }
}
