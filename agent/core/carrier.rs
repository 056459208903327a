//! Samples that JFR attributes to a virtual thread's carrier while the carrier runs that virtual
//! thread. Pure.
//!
//! JFR names the thread of a sample from the carrier's thread-local state, which says whether a
//! virtual thread is the current thread. On JDK 21 `java.lang.VirtualThread` switches the
//! current thread back to the carrier while the virtual thread's frames are still on the stack:
//! around `scheduleUnpark` and `cancel` of a timed park or sleep (`switchToCarrierThread`), and
//! in `yieldContinuation` between unmount and freeze and between thaw and mount (JDK-8315373
//! inverted that order in JDK 22). A sample taken there names the carrier thread (a platform
//! thread, `ForkJoinPool-1-worker-N`) and JFR walks the whole physical stack: the virtual
//! thread's frames, `Continuation.enter`, `Continuation.enterSpecial`, then the carrier's
//! `VirtualThread.runContinuation` and its `ForkJoinPool` loop. The same holds for
//! `jdk.ObjectAllocationSample` and every event the JVM writes for the current thread.
//!
//! The context of such a sample is the virtual thread's, but the event does not say which
//! virtual thread it was: the carrier's context (`{}`) would be wrong, a guess would be too. The
//! sample is `unknown: carrier_transition` whenever it was taken on a carrier that was running a
//! virtual thread, mounting or unmounting it, which shows as:
//!
//! - a frame of a virtual thread's continuation on a platform thread's stack
//!   (`java.lang.VirtualThread.run`, `jdk.internal.vm.Continuation.enter`/`enter0`);
//! - a frame of the carrier's side of the switch (`java.lang.VirtualThread.runContinuation`,
//!   which mounts, runs and unmounts the virtual thread);
//! - on a thread the bridge marked as a carrier (its thread group is the JDK scheduler's
//!   `CarrierThreads`): a stack JFR truncated, or none, since the frames that would tell are
//!   missing.
//!
//! Every other sample of a carrier (the scheduler looking for work, parked between tasks) is the
//! carrier's own and is joined as usual. A sample that names the virtual thread itself is
//! joined to that virtual thread's history whatever its frames show.

use crate::core::model::RawSample;

/// Frames that only a virtual thread's continuation, or a carrier switching to or from one,
/// has on its stack.
const RUNNING_A_VIRTUAL_THREAD: [&str; 4] = [
    "java.lang.VirtualThread.run",
    "java.lang.VirtualThread.runContinuation",
    "jdk.internal.vm.Continuation.enter",
    "jdk.internal.vm.Continuation.enter0",
];

/// The sample names a platform thread that was running a virtual thread (or may have been:
/// a carrier whose stack does not show): its context cannot be the thread's own.
pub fn in_carrier_transition(s: &RawSample) -> bool {
    if s.thread.is_virtual || s.thread.id.is_none() {
        return false;
    }
    if s.carrier && (s.truncated || s.frames.is_empty()) {
        return true;
    }
    s.frames
        .iter()
        .any(|f| RUNNING_A_VIRTUAL_THREAD.contains(&&*f.method))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::{Frame, ThreadInfo};
    use std::sync::Arc;

    fn sample(virt: bool, carrier: bool, truncated: bool, stack: &[&str]) -> RawSample {
        RawSample {
            event: Arc::from("jdk.ExecutionSample"),
            start_ticks: 1,
            duration_ticks: 0,
            thread: ThreadInfo {
                id: Some(30),
                name: Arc::from("ForkJoinPool-1-worker-1"),
                is_virtual: virt,
            },
            weight: 0,
            frames: stack
                .iter()
                .map(|m| Frame {
                    method: Arc::from(*m),
                    line: -1,
                })
                .collect(),
            truncated,
            carrier,
        }
    }

    /// A JDK 21 sample as JFR wrote it: the carrier named, the virtual thread's frames on top.
    const SCHEDULE_UNPARK: [&str; 9] = [
        "java.lang.VirtualThread.scheduleUnpark",
        "java.lang.VirtualThread.parkNanos",
        "app.Work.run",
        "java.lang.VirtualThread.run",
        "jdk.internal.vm.Continuation.enter0",
        "jdk.internal.vm.Continuation.enter",
        "jdk.internal.vm.Continuation.enterSpecial",
        "java.lang.VirtualThread.runContinuation",
        "java.util.concurrent.ForkJoinWorkerThread.run",
    ];
    const IDLE: [&str; 3] = [
        "java.util.concurrent.ForkJoinPool.awaitWork",
        "java.util.concurrent.ForkJoinPool.runWorker",
        "java.util.concurrent.ForkJoinWorkerThread.run",
    ];
    const MOUNTING: [&str; 3] = [
        "java.lang.VirtualThread.mount",
        "java.lang.VirtualThread.runContinuation",
        "java.util.concurrent.ForkJoinWorkerThread.run",
    ];

    #[test]
    fn a_carrier_running_a_virtual_thread_is_a_transition() {
        assert!(in_carrier_transition(&sample(
            false,
            true,
            false,
            &SCHEDULE_UNPARK
        )));
        // Without the bridge's mark (another scheduler, an older bridge): the frames tell.
        assert!(in_carrier_transition(&sample(
            false,
            false,
            false,
            &SCHEDULE_UNPARK
        )));
        assert!(in_carrier_transition(&sample(
            false, true, false, &MOUNTING
        )));
        // The top of the virtual thread's frames only (the bottom cut off by the depth limit).
        assert!(in_carrier_transition(&sample(
            false,
            false,
            true,
            &SCHEDULE_UNPARK[..4]
        )));
    }

    #[test]
    fn a_carrier_whose_frames_do_not_show_is_a_transition() {
        assert!(in_carrier_transition(&sample(
            false,
            true,
            true,
            &SCHEDULE_UNPARK[..2]
        )));
        assert!(in_carrier_transition(&sample(false, true, false, &[])));
    }

    #[test]
    fn the_carriers_own_work_and_virtual_threads_are_joined_as_usual() {
        assert!(!in_carrier_transition(&sample(false, true, false, &IDLE)));
        // A truncated stack on a platform thread that is no carrier proves nothing.
        assert!(!in_carrier_transition(&sample(
            false,
            false,
            true,
            &SCHEDULE_UNPARK[..2]
        )));
        // The virtual thread named: its own history decides.
        assert!(!in_carrier_transition(&sample(
            true,
            false,
            false,
            &SCHEDULE_UNPARK
        )));
        let mut no_thread = sample(false, true, true, &[]);
        no_thread.thread.id = None;
        assert!(!in_carrier_transition(&no_thread));
    }
}
