//! What the JNI entry points call: the facade's natives (`Natives.register`, `grow`, `release`,
//! `intern`, `setFilter`, listener delivery), the bridge's `deliver` and JVMTI ThreadEnd. Each is
//! a few queue or registry operations on the [`Agent`](super::agent); the worker does the rest.

use crate::core::context::registry::Registration;
use crate::core::filter::Filter;
use crate::runtime::agent::agent;
use crate::runtime::faults::{take_panic, test_panic, PANIC_DELIVER, PANIC_INTERN};
use crate::runtime::state::{RingEvent, RUNNING, STOPPED};
use crate::sink::listener;
use crate::time::monotonic_ns;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// `Natives.intern`: one reference on the returned id; drops one per released id.
pub fn intern(entries: Vec<(String, String)>, released: &[i64]) -> Result<u64, String> {
    let Some(a) = agent() else { return Ok(0) };
    if a.state.load(Ordering::Acquire) != RUNNING {
        return Ok(0);
    }
    let interned = catch_unwind(AssertUnwindSafe(|| {
        test_panic(PANIC_INTERN);
        let now = monotonic_ns();
        let mut repo = a.repo.lock();
        for &id in released {
            if id > 0 {
                repo.release(id as u64, now);
            }
        }
        repo.intern(entries)
    }));
    // A panic here must not reach the facade as an exception: it would disable context recording
    // for the rest of the run, and samples would then claim "no context". The context gets an id
    // the repository never hands out instead, so its samples are reported unknown.
    interned.unwrap_or_else(|_| {
        static LOGGED: AtomicBool = AtomicBool::new(false);
        if !LOGGED.swap(true, Ordering::Relaxed) {
            crate::error!(
                "internal error in Natives.intern ({}); samples in that context are reported \
                 unknown (context_released), the application carries on (further ones are not \
                 logged)",
                take_panic()
            );
        }
        Ok(UNINTERNED_CONTEXT)
    })
}

/// The id given to a context whose interning failed: never interned, so `repo.get` finds nothing
/// and its samples are unknown; releasing it is a no-op.
const UNINTERNED_CONTEXT: u64 = i64::MAX as u64;

/// `Natives.register`: the calling thread's ring, allocated on its first registration; a
/// thread registered again (by another copy of the facade, in another class loader) gets the
/// same ring, so that its transitions have one home — also when it took its ring as a spare.
/// None when not running. Returns the ring's memory and its handle.
pub fn register(thread_id: i64, capacity: i32) -> Option<(*mut u8, usize, u64)> {
    let a = agent()?;
    if a.state.load(Ordering::Acquire) != RUNNING || thread_id < 0 {
        return None;
    }
    let cap = if capacity > 0 {
        capacity as usize
    } else {
        a.config.ring_capacity
    };
    a.with_rings(|rings, events| {
        let registration = rings.register(thread_id as u64, || {
            let handle = a.next_handle.fetch_add(1, Ordering::Relaxed);
            let tid = thread_id as u64;
            Arc::new(a.ring_of(cap, tid, handle))
        });
        let ring = registration.ring();
        let mem = (ring.as_ptr(), ring.byte_len(), ring.handle());
        if let Registration::New(ring) = registration {
            events.push(RingEvent::New(ring));
            a.threads_registered.fetch_add(1, Ordering::Relaxed);
        }
        Some(mem)
    })
}

/// `Natives.spareQueue`: the address of the spare queue (`core::context::spares`), topped up now
/// when running so that the first take finds spares; the worker keeps it topped up from now on.
/// 0 with `spares=off` (the facade then stops asking).
pub fn spare_queue() -> i64 {
    let Some(a) = agent() else { return 0 };
    if !a.config.spares {
        return 0;
    }
    a.spares_wanted.store(true, Ordering::Relaxed);
    if a.state.load(Ordering::Acquire) == RUNNING {
        a.adopt_and_top_up(&mut 0)
    } else {
        a.rings.lock().queue().address() as i64
    }
}

/// `Natives.wakeWord`: the worker's long-sleep word (`crate::runtime::agent::LONG_SLEEP`) as
/// its address and length, for a read-only direct buffer; a static, so it never moves or ends.
pub fn wake_word() -> (*mut u8, usize) {
    let word = &crate::runtime::agent::LONG_SLEEP;
    (word.as_ptr().cast(), std::mem::size_of::<u64>())
}

/// `Natives.wake`: a thread reached a half lap of its ring while the worker was in a long idle
/// sleep (see `crate::runtime::pace`): the word is cleared and the worker runs a round now, with
/// at least half the ring still free, and its pace then follows the ring's fill.
pub fn wake() {
    if let Some(a) = agent() {
        a.wake_worker();
    }
}

/// `Natives.grow` and `Natives.growAddress`: the sole holder of ring `handle` moves to a ring
/// of `capacity` entries (the worker asked for it, see `join::growth`); None when refused (not
/// running, another facade copy holds the ring too, an unknown handle) or when `wrap`, given the
/// new ring's memory before anything changes, returns false (the Java object for it could not be
/// made). The worker drains the old ring one last time when it picks up the new one; the caller
/// writes only to the new one from now on.
pub fn grow(
    handle: i64,
    capacity: i32,
    wrap: impl FnOnce(*mut u8, usize) -> bool,
) -> Option<(*mut u8, usize)> {
    let a = agent()?;
    if a.state.load(Ordering::Acquire) != RUNNING || handle <= 0 || capacity <= 0 {
        return None;
    }
    let cap = (capacity as usize).min(crate::core::context::ring::MAX_GROWN_CAPACITY);
    a.with_rings(|rings, events| {
        let ring = rings.grow(handle as u64, |tid| {
            let ring = Arc::new(a.ring_of(cap, tid, handle as u64));
            wrap(ring.as_ptr(), ring.byte_len()).then_some(ring)
        })?;
        let mem = (ring.as_ptr(), ring.byte_len());
        events.push(RingEvent::New(ring));
        Some(mem)
    })
}

/// `Natives.release`: one holder of the ring (a facade copy's writer) is gone; the worker
/// drains and frees the ring when it was the last.
pub fn release(handle: i64) {
    if let Some(a) = agent() {
        if handle > 0 {
            a.with_rings(|rings, events| {
                if rings.release(handle as u64) {
                    events.push(RingEvent::Released(handle as u64));
                }
            });
        }
    }
}

/// Whether ThreadEnd events are worth a JNI call: only while running and once some thread has
/// registered a ring or spares were handed out.
pub fn wants_thread_end() -> bool {
    agent().is_some_and(|a| {
        a.state.load(Ordering::Acquire) == RUNNING
            && (a.threads_registered.load(Ordering::Relaxed) > 0
                || a.spares_made.load(Ordering::Relaxed) > 0)
    })
}

/// JVMTI ThreadEnd: the platform thread `thread_id` is gone; its ring (if any) is released.
pub fn thread_ended(thread_id: i64) {
    if let Some(a) = agent() {
        if thread_id >= 0 {
            a.with_rings(|rings, events| {
                if rings.thread_ended(thread_id as u64) {
                    events.push(RingEvent::Ended(thread_id as u64));
                }
            });
        }
    }
}

/// `Natives.deliver`: one encoded batch from the stream bridge.
pub fn deliver(bytes: Vec<u8>) {
    if let Some(a) = agent() {
        // Stopped (after the worker gave up): nobody would ever take the batch off the queue.
        if a.state.load(Ordering::Acquire) == STOPPED {
            return;
        }
        test_panic(PANIC_DELIVER);
        a.batches.push(bytes);
    }
}

/// `Natives.setFilter`: replaces the filter (`None` or a blank spec: no filter). Samples decided
/// from the next worker round on obey it. The error is one line.
pub fn set_filter(spec: Option<&str>) -> Result<(), String> {
    let filter = Filter::parse(spec.unwrap_or(""))?;
    if let Some(a) = agent() {
        match &filter {
            Some(f) => crate::info!("filter set: {f}"),
            None => crate::info!("filter removed"),
        }
        *a.filter.lock() = filter.map(Arc::new);
    }
    Ok(())
}

/// `Natives.setListening`: switches delivery to in-process listeners on or off.
pub fn set_listening(on: bool, listener_thread: i64) {
    let on = on && agent().is_some_and(|a| a.state.load(Ordering::Acquire) == RUNNING);
    listener::HUB.set_listening(on, listener_thread);
}

/// `Natives.pollSamples`: the next listener batch, waiting at most `timeout`.
pub fn poll_samples(timeout: Duration) -> Option<Vec<u8>> {
    listener::HUB.poll(timeout)
}
