//! What the JNI entry points and the worker share: the agent's state (Loaded → Running →
//! Stopped), the context repository, the ring registry, the queues from the entry points to the
//! worker and the filter. Lock-free queues and short locks only.

use crate::core::context::registry::RingRegistry;
use crate::core::context::repo::Repository;
use crate::core::context::ring::Ring;
use crate::core::filter::Filter;
use crate::options::Config;
use crossbeam_queue::SegQueue;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, AtomicU8};
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
    pub(crate) new_rings: SegQueue<Arc<Ring>>,
    pub(crate) released: SegQueue<u64>,
    pub(crate) ended_threads: SegQueue<u64>,
    pub(crate) batches: SegQueue<Vec<u8>>,
    pub(crate) next_handle: AtomicU64,
    pub(crate) threads_registered: AtomicU64,
    /// The `RecordingContextFilter` (the `filter=` option, replaced by `Natives.setFilter`);
    /// `None`: every sample passes.
    pub(crate) filter: Mutex<Option<Arc<Filter>>>,
}
