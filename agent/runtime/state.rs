//! What the JNI entry points and the worker share: the agent's state (Loaded → Running →
//! Stopped), the context repository, the ring registry, the queues from the entry points to the
//! worker and the filter. Lock-free queues and short locks only.

use crate::core::context::registry::RingRegistry;
use crate::core::context::repo::Repository;
use crate::core::context::ring::{effective_capacity, Blocks, Ring};
use crate::core::context::spares;
use crate::core::filter::Filter;
use crate::options::Config;
use crossbeam_queue::SegQueue;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
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
    /// Memory of dropped rings of the default capacity, reused by registrations and by spares
    /// growing to that size (see `Ring::pooled`).
    pub(crate) blocks: Arc<Blocks>,
    /// Memory of spares (`spare_ring=` entries each; `blocks` itself when that is the default
    /// capacity). Small spares share pages, so that a core's first store into a spare it took
    /// finds the page's translation there more often (ARCHITECTURE.md, "Spare rings").
    pub(crate) spare_blocks: Arc<Blocks>,
    /// Spares handed to Java so far.
    pub(crate) spares_made: AtomicU64,
    /// Java asked for the spare queue (`Natives.spareQueue`): the worker keeps it topped up.
    pub(crate) spares_wanted: AtomicBool,
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

/// Free ring memory blocks kept for reuse at most (4 MiB at the default ring).
pub const KEEP_BLOCKS: usize = 256;
/// Free spare blocks kept for reuse at most: the spare queue's size (1.1 MiB at the default
/// `spare_ring`).
pub const KEEP_SPARE_BLOCKS: usize = crate::core::context::spares::SLOTS;

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

    /// A new ring of `capacity` entries for thread `thread_id`: at the default capacity (nearly
    /// every registration, and a spare growing at its first lap) in a dropped ring's memory
    /// (`Ring::pooled`), else allocated.
    pub(crate) fn ring_of(&self, capacity: usize, thread_id: u64, handle: u64) -> Ring {
        if effective_capacity(capacity) == self.blocks.capacity() {
            Ring::pooled(&self.blocks, thread_id, handle)
        } else {
            Ring::new(capacity, thread_id, handle)
        }
    }

    /// Adopts the claims made since the last look and, once Java asked for spares, tops the
    /// spare queue up (to twice what was taken since `last_taken`, see `spares::target`): the
    /// worker in every round, and `Natives.spareQueue`. Returns the queue's address.
    pub(crate) fn adopt_and_top_up(&self, last_taken: &mut u64) -> i64 {
        let wanted = self.spares_wanted.load(Ordering::Relaxed);
        self.with_rings(|rings, _| {
            if wanted {
                let taken = rings.queue().taken();
                let target = spares::target(taken.saturating_sub(*last_taken));
                *last_taken = taken;
                let made = rings.top_up(target, || {
                    let handle = self.next_handle.fetch_add(1, Ordering::Relaxed);
                    let ring = Ring::spare(&self.spare_blocks, handle);
                    // A spare smaller than `ring=` asks at once for a ring of that size: its
                    // thread moves at its first lap, before any entry is overwritten.
                    if ring.capacity() < self.config.ring_capacity {
                        ring.request_growth(self.config.ring_capacity);
                    }
                    Arc::new(ring)
                });
                self.spares_made.fetch_add(made as u64, Ordering::Relaxed);
            }
            rings.queue().address() as i64
        })
    }
}
