//! Which ring each live Java thread writes to (pure).
//!
//! One thread's transitions have one home, whichever copy of the facade makes them: an
//! application server can load `jfrctx.jar` once per web application (a class loader each), and
//! every copy registers the threads it runs on. The first registration of a thread allocates its
//! ring; later ones (other copies) get the same ring and count as one more holder. Each holder
//! releases once (`Natives.release` from its copy's `Cleaner`, when its writer is unreachable);
//! the ring is handed to the worker for its last drain only when the last holder is gone, or at
//! once when the thread itself ended (JVMTI ThreadEnd: nobody can write any more). Dropping a
//! ring while another copy still writes into its memory would corrupt the heap.

use super::ring::Ring;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Debug)]
struct Entry {
    ring: Arc<Ring>,
    holders: u32,
}

/// Live rings by Java thread id, with the number of facade copies holding each.
#[derive(Debug, Default)]
pub struct RingRegistry {
    by_thread: HashMap<u64, Entry>,
    by_handle: HashMap<u64, u64>,
    shared: u64,
}

/// What [`RingRegistry::register`] did.
#[derive(Debug)]
pub enum Registration {
    /// A new ring: the worker must start draining it.
    New(Arc<Ring>),
    /// The thread already had a live ring (another facade copy registered it): the same one.
    Shared(Arc<Ring>),
}

impl Registration {
    /// The ring the caller writes to.
    pub fn ring(&self) -> &Arc<Ring> {
        match self {
            Registration::New(r) | Registration::Shared(r) => r,
        }
    }
}

impl RingRegistry {
    /// An empty registry.
    pub fn new() -> RingRegistry {
        RingRegistry::default()
    }

    /// Registers one more holder of `thread_id`'s ring, creating the ring with `make` when the
    /// thread has none.
    pub fn register(&mut self, thread_id: u64, make: impl FnOnce() -> Arc<Ring>) -> Registration {
        if let Some(e) = self.by_thread.get_mut(&thread_id) {
            e.holders = e.holders.saturating_add(1);
            self.shared += 1;
            return Registration::Shared(Arc::clone(&e.ring));
        }
        let ring = make();
        self.by_handle.insert(ring.handle(), thread_id);
        self.by_thread.insert(
            thread_id,
            Entry {
                ring: Arc::clone(&ring),
                holders: 1,
            },
        );
        Registration::New(ring)
    }

    /// One holder of ring `handle` is gone. Returns `true` when it was the last one: the ring
    /// must now be released to the worker. A handle not (or no longer) live returns `false`.
    pub fn release(&mut self, handle: u64) -> bool {
        let Some(&tid) = self.by_handle.get(&handle) else {
            return false;
        };
        let Some(e) = self.by_thread.get_mut(&tid) else {
            self.by_handle.remove(&handle);
            return false;
        };
        e.holders = e.holders.saturating_sub(1);
        if e.holders > 0 {
            return false;
        }
        self.by_thread.remove(&tid);
        self.by_handle.remove(&handle);
        true
    }

    /// The holder of ring `handle` moves to a bigger ring made by `make` (same thread, same
    /// handle): returns it, or `None` when the handle is not live or more than one facade copy
    /// holds the ring (the others would keep writing to the old one).
    pub fn grow(&mut self, handle: u64, make: impl FnOnce(u64) -> Arc<Ring>) -> Option<Arc<Ring>> {
        let &tid = self.by_handle.get(&handle)?;
        let e = self.by_thread.get_mut(&tid)?;
        if e.holders != 1 {
            return None;
        }
        let ring = make(tid);
        debug_assert_eq!(ring.handle(), handle);
        e.ring = Arc::clone(&ring);
        Some(ring)
    }

    /// The thread ended: its ring is no longer live, whatever its holders (their later releases
    /// are no-ops). Returns whether it had one.
    pub fn thread_ended(&mut self, thread_id: u64) -> bool {
        match self.by_thread.remove(&thread_id) {
            Some(e) => {
                self.by_handle.remove(&e.ring.handle());
                true
            }
            None => false,
        }
    }

    /// Live rings.
    pub fn len(&self) -> usize {
        self.by_thread.len()
    }

    /// Whether no ring is live.
    pub fn is_empty(&self) -> bool {
        self.by_thread.is_empty()
    }

    /// Registrations answered with an existing ring so far (a second facade copy on a thread).
    pub fn shared_registrations(&self) -> u64 {
        self.shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(tid: u64, handle: u64) -> Arc<Ring> {
        Arc::new(Ring::new(16, tid, handle))
    }

    #[test]
    fn a_second_copy_gets_the_same_ring() {
        let mut r = RingRegistry::new();
        let a = r.register(7, || ring(7, 1));
        assert!(matches!(a, Registration::New(_)));
        let b = r.register(7, || panic!("must not allocate a second ring"));
        assert!(matches!(b, Registration::Shared(_)));
        assert!(Arc::ptr_eq(a.ring(), b.ring()));
        assert_eq!(a.ring().as_ptr(), b.ring().as_ptr());
        assert_eq!(r.len(), 1);
        assert_eq!(r.shared_registrations(), 1);
    }

    #[test]
    fn the_ring_is_released_by_its_last_holder_only() {
        let mut r = RingRegistry::new();
        r.register(7, || ring(7, 1));
        r.register(7, || ring(7, 2));
        r.register(7, || ring(7, 3));
        assert!(!r.release(1));
        assert!(!r.release(1));
        assert_eq!(r.len(), 1);
        assert!(r.release(1));
        assert!(r.is_empty());
        assert!(!r.release(1), "a release after the last is a no-op");
    }

    #[test]
    fn a_thread_end_frees_whatever_the_holders() {
        let mut r = RingRegistry::new();
        r.register(7, || ring(7, 1));
        r.register(7, || ring(7, 2));
        assert!(r.thread_ended(7));
        assert!(!r.thread_ended(7));
        assert!(!r.release(1), "releases after the end are no-ops");
        assert!(r.is_empty());
    }

    #[test]
    fn after_the_last_release_a_thread_gets_a_fresh_ring() {
        let mut r = RingRegistry::new();
        r.register(7, || ring(7, 1));
        assert!(r.release(1));
        let again = r.register(7, || ring(7, 2));
        assert!(matches!(again, Registration::New(_)));
        assert_eq!(again.ring().handle(), 2);
        assert!(!r.release(1), "the old handle is gone");
        assert!(r.release(2));
    }

    #[test]
    fn a_sole_holder_grows_its_ring_under_the_same_handle() {
        let mut r = RingRegistry::new();
        r.register(7, || ring(7, 1));
        let bigger = r
            .grow(1, |tid| Arc::new(Ring::new(64, tid, 1)))
            .expect("grown");
        assert_eq!(bigger.capacity(), 64);
        let again = r.register(7, || panic!("the grown ring is live"));
        assert!(Arc::ptr_eq(again.ring(), &bigger));
        assert!(r.grow(1, |_| panic!("two holders: no growth")).is_none());
        assert!(r.grow(99, |_| panic!("unknown handle")).is_none());
        assert!(!r.release(1));
        assert!(r.release(1));
    }

    #[test]
    fn threads_are_independent() {
        let mut r = RingRegistry::new();
        r.register(1, || ring(1, 1));
        r.register(2, || ring(2, 2));
        assert!(r.release(1));
        assert_eq!(r.len(), 1);
        assert!(r.thread_ended(2));
        assert!(r.is_empty());
    }
}
