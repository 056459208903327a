//! What the JNI entry points and the worker share: the agent's state (Loaded → Running →
//! Stopped), the context repository, the ring registry, the queues from the entry points to the
//! worker and the filter. Lock-free queues and short locks only.

use crate::core::context::registry::RingRegistry;
use crate::core::context::repo::Repository;
use crate::core::context::ring::{Blocks, Ring};
use crate::core::filter::Filter;
use crate::options::Config;
use crossbeam_queue::SegQueue;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

pub const LOADED: u8 = 0;
pub const RUNNING: u8 = 1;
pub const STOPPED: u8 = 2;

/// The shared part of the agent.
pub struct Shared {
    pub(crate) config: Config,
    pub(crate) state: AtomicU8,
    pub(crate) repo: Mutex<Repository>,
    /// Live rings by thread, shared by every facade copy (registration and release are rare:
    /// once per thread and copy).
    pub(crate) rings: Mutex<RingRegistry>,
    /// What happened to rings, in the registry's order (pushed under its lock): the worker
    /// applies them in that order, so a ring is always added before its release.
    pub(crate) ring_events: SegQueue<RingEvent>,
    /// Memory of dropped rings of the default capacity, reused by spares and registrations (see
    /// `Ring::pooled`).
    pub(crate) blocks: Arc<Blocks>,
    /// Spares handed to Java so far.
    pub(crate) spares_made: AtomicU64,
    pub(crate) batches: SegQueue<Vec<u8>>,
    pub(crate) next_handle: AtomicU64,
    pub(crate) threads_registered: AtomicU64,
    /// The `RecordingContextFilter` (the `filter=` option, replaced by `Natives.setFilter`);
    /// `None`: every sample passes.
    pub(crate) filter: Mutex<Option<Arc<Filter>>>,
}

/// A change to the rings, for the worker's joiner.
#[derive(Debug)]
pub enum RingEvent {
    /// A newly registered (or adopted, or grown) ring: drain it from now on.
    New(Arc<Ring>),
    /// The last holder of the ring with this handle is gone.
    Released(u64),
    /// The Java thread with this id ended (its ring, if any, is released).
    Ended(u64),
}

/// Spare rings made at once at most (`Natives.spares`).
pub const SPARES_PER_CALL: usize = 256;
/// Unclaimed spares at most: beyond, `Natives.spares` makes none (16 MiB at the default ring).
pub const MAX_SPARES: usize = 1024;
/// Free ring memory blocks kept for reuse at most (4 MiB at the default ring).
pub const KEEP_BLOCKS: usize = 256;

impl Shared {
    /// Runs `f` on the ring registry under its lock, after adopting the spares claimed since the
    /// last look; the events (the adopted rings' first, then `f`'s) are queued for the worker
    /// before the lock is released, so that the queue has the registry's order.
    pub(crate) fn with_rings<R>(
        &self,
        f: impl FnOnce(&mut RingRegistry, &mut Vec<RingEvent>) -> R,
    ) -> R {
        let mut reg = self.rings.lock();
        reg.adopt_claims();
        let mut events: Vec<RingEvent> =
            reg.take_adopted().into_iter().map(RingEvent::New).collect();
        let adopted = events.len() as u64;
        let r = f(&mut reg, &mut events);
        if adopted > 0 {
            self.threads_registered
                .fetch_add(adopted, Ordering::Relaxed);
        }
        for e in events {
            self.ring_events.push(e);
        }
        r
    }
}
