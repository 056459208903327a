//! The join pipeline of one worker round, pure: each pending raw sample is either decided (its
//! calibrated time joined with its thread's history: a context, or an unknown reason) or kept
//! for a later round (its thread's history is not yet drained past its time). The worker runs it
//! on the agent's state; `benches/join.rs` runs the same function on a synthetic world.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::core::carrier::in_carrier_transition;
use crate::core::clock::Calibration;
use crate::core::context::repo::Repository;
use crate::core::join::{Decision, Joiner};
use crate::core::model::{ContextMap, ContextualSample, RawSample, UnknownReason};

/// Decides every sample of `pending` that can be decided now, in order, handing each to `emit`;
/// the others stay in `pending`. Without a calibration nothing can be decided: the samples wait,
/// or in the `last` round are all `not_calibrated`. In the `last` round nothing waits.
pub fn join_pending(
    pending: &mut VecDeque<RawSample>,
    calibration: Option<Calibration>,
    joiner: &Joiner,
    repo: &mut Repository,
    last: bool,
    mut emit: impl FnMut(ContextualSample),
) {
    let mut keep = VecDeque::new();
    while let Some(s) = pending.pop_front() {
        let Some(cal) = calibration else {
            if last {
                emit(contextual(s, 0, 0, Err(UnknownReason::NotCalibrated)));
            } else {
                keep.push_back(s);
            }
            continue;
        };
        let t = cal.to_nanos(s.start_ticks);
        let decision = if in_carrier_transition(&s) {
            Decision::Unknown(UnknownReason::CarrierTransition)
        } else if last {
            joiner.decide_final(s.thread.id, t)
        } else {
            joiner.decide(s.thread.id, t)
        };
        let context = match decision {
            Decision::Defer => {
                keep.push_back(s);
                continue;
            }
            Decision::Unknown(r) => Err(r),
            Decision::Context(id) => repo.get(id).ok_or(UnknownReason::ContextReleased),
        };
        let d = cal.duration_to_nanos(s.duration_ticks);
        emit(contextual(s, t, d, context));
    }
    *pending = keep;
}

/// `s` with its calibrated time and duration and the join's answer.
pub fn contextual(
    s: RawSample,
    time_ns: i64,
    duration_ns: i64,
    context: Result<Arc<ContextMap>, UnknownReason>,
) -> ContextualSample {
    ContextualSample {
        event: s.event,
        time_ns,
        duration_ns,
        thread: s.thread,
        context,
        weight: s.weight,
        frames: s.frames,
        truncated: s.truncated,
    }
}
