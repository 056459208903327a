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
//!
//! Spares: rings made in advance ([`RingRegistry::top_up`], by the worker every round) and
//! published on the spare queue, from which a thread's first context takes one without a JNI
//! call. A thread claims one by
//! writing its id into the header; [`RingRegistry::adopt_claims`] turns every claimed spare into
//! that thread's registered ring (one holder) and must run before anything else looks the
//! thread up: every operation here calls it first, so a release, a thread end or a second copy's
//! registration that follows a claim (they all happen after it) finds the ring. The facade keeps
//! a thread from claiming a spare while it holds a ring (`RingPool`'s per-thread mark).

use super::ring::Ring;
use super::spares::{Spare, SpareQueue};
use ahash::RandomState;
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
    /// aHash, not SipHash: a registration per fresh thread hashes into both maps.
    by_thread: HashMap<u64, Entry, RandomState>,
    by_handle: HashMap<u64, u64, RandomState>,
    shared: u64,
    /// Rings handed to Java as spares and not seen claimed yet, in the order made.
    spares: Vec<Arc<Ring>>,
    /// Where Java takes the spares from, in the same order.
    queue: SpareQueue,
    /// Spares claimed so far.
    claimed: u64,
    /// Claims by a thread that already had a live ring (the claim wins, as a second
    /// registration would after a release). Normal when the thread handed its ring back
    /// (`retired`) and claimed a spare before the worker saw the hand-back.
    conflicting_claims: u64,
    /// Rings moved to a bigger one (`grow`): asked by the worker, or a spare smaller than
    /// `ring=` at its first lap.
    grown: u64,
    /// Rings replaced by a claim although not every holder had handed them back: a writer may
    /// still use them, so their memory is kept for the agent's lifetime instead of being freed
    /// under it (the facade's mark and ordered spares prevent this; kept as a safety net).
    kept: Vec<Arc<Ring>>,
    /// Spares adopted and not yet taken by `take_adopted`.
    adopted: Vec<Arc<Ring>>,
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
        self.adopt_claims();
        if let Some(e) = self.by_thread.get_mut(&thread_id) {
            e.holders = e.holders.saturating_add(1);
            self.shared += 1;
            return Registration::Shared(Arc::clone(&e.ring));
        }
        let ring = make();
        self.insert(thread_id, &ring);
        Registration::New(ring)
    }

    /// `ring` is `thread_id`'s, with one holder.
    fn insert(&mut self, thread_id: u64, ring: &Arc<Ring>) {
        self.by_handle.insert(ring.handle(), thread_id);
        self.by_thread.insert(
            thread_id,
            Entry {
                ring: Arc::clone(ring),
                holders: 1,
            },
        );
    }

    /// One holder of ring `handle` is gone. Returns `true` when it was the last one: the ring
    /// must now be released to the worker. A handle not (or no longer) live returns `false`.
    pub fn release(&mut self, handle: u64) -> bool {
        self.adopt_claims();
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
    /// handle): returns it, or `None` when the handle is not live, more than one facade copy
    /// holds the ring (the others would keep writing to the old one), or `make` gives none
    /// (nothing changes then).
    pub fn grow(
        &mut self,
        handle: u64,
        make: impl FnOnce(u64) -> Option<Arc<Ring>>,
    ) -> Option<Arc<Ring>> {
        self.adopt_claims();
        let &tid = self.by_handle.get(&handle)?;
        let e = self.by_thread.get_mut(&tid)?;
        if e.holders != 1 {
            // Refused for as long as the copies share it: the producer stops asking at each
            // lap (the worker asks again when the ring fills).
            e.ring.withdraw_growth();
            return None;
        }
        let ring = make(tid)?;
        debug_assert_eq!(ring.handle(), handle);
        e.ring = Arc::clone(&ring);
        self.grown += 1;
        Some(ring)
    }

    /// The thread ended: its ring is no longer live, whatever its holders (their later releases
    /// are no-ops). Returns whether it had one.
    pub fn thread_ended(&mut self, thread_id: u64) -> bool {
        self.adopt_claims();
        match self.by_thread.remove(&thread_id) {
            Some(e) => {
                self.by_handle.remove(&e.ring.handle());
                true
            }
            None => false,
        }
    }

    /// Makes spares with `make` until `target` wait on the queue untaken (or the queue is full),
    /// and publishes them: how many were made.
    pub fn top_up(&mut self, target: usize, mut make: impl FnMut() -> Arc<Ring>) -> usize {
        // `room()` is `SLOTS - waiting`: the cap keeps the count within it.
        let n = target
            .min(super::spares::SLOTS)
            .saturating_sub(self.queue.waiting());
        if n == 0 {
            return 0;
        }
        let mut made = Vec::with_capacity(n);
        for _ in 0..n {
            let ring = make();
            made.push(Spare {
                address: ring.as_ptr(),
                handle: ring.handle(),
                capacity: ring.capacity(),
            });
            self.spares.push(ring);
        }
        let published = self.queue.publish(&made);
        debug_assert_eq!(published, n, "room was checked under the lock");
        n
    }

    /// The spare queue (its address for Java, its counters for the worker).
    pub fn queue(&self) -> &SpareQueue {
        &self.queue
    }

    /// Spares not claimed as of the last look.
    pub fn spares(&self) -> usize {
        self.spares.len()
    }

    /// Rings grown so far.
    pub fn grown(&self) -> u64 {
        self.grown
    }

    /// Spares claimed so far, and claims by a thread that already had a live ring.
    pub fn claims(&self) -> (u64, u64) {
        (self.claimed, self.conflicting_claims)
    }

    /// Rings kept alive because a claim replaced them before every holder handed them back.
    pub fn kept(&self) -> usize {
        self.kept.len()
    }

    /// Registers every spare claimed since the last look as its claimer's ring (one holder);
    /// [`RingRegistry::take_adopted`] hands them to the worker, which must drain them as newly
    /// registered rings. A thread that already had a live ring moves to the claimed one
    /// (counted in `claims`). Every other operation calls this first.
    pub fn adopt_claims(&mut self) {
        // Only taken spares can be claimed, and the queue hands them out in the order made: the
        // newest `waiting` of the list are still on the queue (a take after this read, and its
        // claim, are for a later look). One pass of loads; most calls find nothing claimed.
        let taken = self.spares.len() - self.queue.waiting().min(self.spares.len());
        let Some(first) = self.spares[..taken]
            .iter()
            .position(|r| r.claimed_by().is_some())
        else {
            return;
        };
        // `spares` keeps the unclaimed ones before `first`, in order; the untaken ones go back
        // after the rest, unread.
        let untaken = self.spares.split_off(taken);
        let rest = self.spares.split_off(first);
        for ring in rest {
            // Read again: a claim may have landed since the first pass.
            let Some(tid) = ring.claimed_by() else {
                self.spares.push(ring);
                continue;
            };
            ring.bind(tid);
            if let Some(old) = self.by_thread.remove(&tid) {
                self.by_handle.remove(&old.ring.handle());
                self.conflicting_claims += 1;
                if old.ring.retired() < u64::from(old.holders) {
                    self.kept.push(old.ring);
                }
            }
            self.insert(tid, &ring);
            self.claimed += 1;
            self.adopted.push(ring);
        }
        self.spares.extend(untaken);
    }

    /// Spares adopted since the last call, oldest first: the caller hands them to the worker
    /// (as `Registration::New` rings) before anything it learnt from the same call.
    pub fn take_adopted(&mut self) -> Vec<Arc<Ring>> {
        std::mem::take(&mut self.adopted)
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
    use crate::core::context::ring::Blocks;

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
    fn a_growth_whose_ring_cannot_be_handed_over_changes_nothing() {
        let mut r = RingRegistry::new();
        let old = Arc::clone(r.register(7, || ring(7, 1)).ring());
        assert!(r.grow(1, |_| None).is_none());
        let again = r.register(7, || panic!("still registered"));
        assert!(Arc::ptr_eq(again.ring(), &old), "the thread keeps its ring");
    }

    #[test]
    fn a_sole_holder_grows_its_ring_under_the_same_handle() {
        let mut r = RingRegistry::new();
        r.register(7, || ring(7, 1));
        let bigger = r
            .grow(1, |tid| Some(Arc::new(Ring::new(64, tid, 1))))
            .expect("grown");
        assert_eq!(bigger.capacity(), 64);
        assert_eq!(r.grown(), 1);
        let again = r.register(7, || panic!("the grown ring is live"));
        assert!(Arc::ptr_eq(again.ring(), &bigger));
        bigger.request_growth(256);
        assert!(r.grow(1, |_| panic!("two holders: no growth")).is_none());
        assert_eq!(
            bigger.growth_requested(),
            0,
            "refused: withdrawn, not asked at every lap"
        );
        assert!(r.grow(99, |_| panic!("unknown handle")).is_none());
        assert!(!r.release(1));
        assert!(r.release(1));
    }

    fn spare(blocks: &Arc<Blocks>, handle: u64) -> Arc<Ring> {
        Arc::new(Ring::spare(blocks, handle))
    }

    /// A spare the registry made (handle `handle`), taken from its queue as a Java thread takes
    /// one (the queue is empty before).
    fn taken_spare(r: &mut RingRegistry, blocks: &Arc<Blocks>, handle: u64) -> Arc<Ring> {
        assert_eq!(r.queue().waiting(), 0);
        assert_eq!(r.top_up(1, || spare(blocks, handle)), 1);
        let address = r.queue().take().expect("the spare just made");
        let ring = r.spares.last().expect("made");
        assert_eq!(ring.as_ptr() as i64, address);
        Arc::clone(ring)
    }

    #[test]
    fn a_claimed_spare_becomes_its_threads_ring_once() {
        let blocks = Blocks::new(16, 4);
        let mut r = RingRegistry::new();
        taken_spare(&mut r, &blocks, 10);
        let second = taken_spare(&mut r, &blocks, 11);
        r.adopt_claims();
        assert!(r.take_adopted().is_empty(), "nothing claimed yet");
        assert_eq!(r.spares(), 2);
        second.claim(7);
        r.adopt_claims();
        let adopted = r.take_adopted();
        assert_eq!(adopted.len(), 1);
        assert!(Arc::ptr_eq(&adopted[0], &second));
        assert_eq!(second.thread_id(), 7, "bound to its claimer");
        assert_eq!(r.spares(), 1);
        assert_eq!(r.claims(), (1, 0));
        r.adopt_claims();
        assert!(r.take_adopted().is_empty(), "adopted once");
        // A second facade copy on thread 7 registers: the same ring, one more holder.
        let again = r.register(7, || panic!("thread 7 has its spare"));
        assert!(matches!(again, Registration::Shared(_)));
        assert!(Arc::ptr_eq(again.ring(), &second));
        assert!(!r.release(11));
        assert!(r.release(11));
        assert!(r.is_empty());
    }

    #[test]
    fn spares_are_topped_up_and_taken_in_the_order_made() {
        let blocks = Blocks::new(16, 4);
        let mut r = RingRegistry::new();
        let mut handle = 100;
        let mut make = || {
            handle += 1;
            spare(&blocks, handle)
        };
        assert_eq!(r.top_up(3, &mut make), 3);
        assert_eq!(r.top_up(3, &mut make), 0, "three wait already");
        let first = r.queue().take().expect("a spare");
        assert_eq!(first, r.spares[0].as_ptr() as i64, "the oldest first");
        assert_eq!(r.top_up(3, &mut make), 1, "one more for the one taken");
        assert_eq!(r.spares(), 4, "the taken one waits for its claim");
        r.spares[0].claim(7);
        r.adopt_claims();
        let adopted = r.take_adopted();
        assert_eq!(adopted.len(), 1);
        assert_eq!(adopted[0].as_ptr() as i64, first);
        assert_eq!(adopted[0].thread_id(), 7);
        let order: Vec<i64> = std::iter::from_fn(|| r.queue().take()).collect();
        let made: Vec<i64> = r.spares.iter().map(|s| s.as_ptr() as i64).collect();
        assert_eq!(order, made, "the queue's order is the registry's");
    }

    #[test]
    fn only_taken_spares_are_looked_at() {
        let blocks = Blocks::new(16, 4);
        let mut r = RingRegistry::new();
        let mut handle = 0;
        r.top_up(2, || {
            handle += 1;
            spare(&blocks, handle)
        });
        // A claim word on a spare still on the queue (no Java thread writes one) is not read.
        let second = Arc::clone(&r.spares[1]);
        second.claim(9);
        r.adopt_claims();
        assert!(r.take_adopted().is_empty(), "untaken: not looked at");
        r.queue().take().expect("the first");
        r.adopt_claims();
        assert!(
            r.take_adopted().is_empty(),
            "the first is taken but unclaimed"
        );
        r.queue().take().expect("the second");
        r.adopt_claims();
        let adopted = r.take_adopted();
        assert_eq!(adopted.len(), 1);
        assert!(Arc::ptr_eq(&adopted[0], &second));
        assert_eq!(r.spares(), 1, "the first still waits for its claim");
    }

    #[test]
    fn every_operation_first_adopts_what_was_claimed() {
        let blocks = Blocks::new(16, 4);
        // A release (a Cleaner) that follows a claim the worker has not looked at yet.
        let mut r = RingRegistry::new();
        let s = taken_spare(&mut r, &blocks, 20);
        s.claim(3);
        assert!(r.release(20), "the claimer was the only holder");
        assert_eq!(r.take_adopted().len(), 1, "adopted before the release");
        // A thread end.
        let s = taken_spare(&mut r, &blocks, 21);
        s.claim(4);
        assert!(r.thread_ended(4));
        assert_eq!(r.take_adopted().len(), 1);
        // A registration by another copy on the claimer's thread.
        let s = taken_spare(&mut r, &blocks, 22);
        s.claim(5);
        let reg = r.register(5, || panic!("must find the claimed spare"));
        assert!(Arc::ptr_eq(reg.ring(), &s));
        // Growth of the claimed ring.
        let s = taken_spare(&mut r, &blocks, 23);
        s.claim(6);
        let bigger = r
            .grow(23, |tid| Some(Arc::new(Ring::new(64, tid, 23))))
            .expect("sole holder");
        assert_eq!(bigger.thread_id(), 6);
    }

    #[test]
    fn a_claim_by_a_thread_with_a_ring_moves_it_and_is_counted() {
        let blocks = Blocks::new(16, 4);
        let mut r = RingRegistry::new();
        r.register(9, || ring(9, 1));
        let s = taken_spare(&mut r, &blocks, 30);
        s.claim(9);
        r.adopt_claims();
        assert_eq!(r.claims(), (1, 1));
        let now = r.register(9, || panic!("live"));
        assert!(Arc::ptr_eq(now.ring(), &s));
        assert!(!r.release(1), "the old handle is gone");
    }

    #[test]
    fn a_ring_replaced_before_its_hand_back_is_kept_not_freed() {
        let blocks = Blocks::new(16, 4);
        let mut r = RingRegistry::new();
        // Thread 9 handed its ring back, then claimed a spare: the old ring may go.
        let handed_back = Arc::clone(r.register(9, || ring(9, 1)).ring());
        handed_back.retire();
        let s = taken_spare(&mut r, &blocks, 30);
        s.claim(9);
        r.adopt_claims();
        assert_eq!(r.kept(), 0);
        assert_eq!(
            Arc::strong_count(&handed_back),
            1,
            "only this test holds it now"
        );
        // A claim while its ring is still held (no hand-back): that ring's writer may still
        // write, so the registry keeps its memory alive.
        let t = taken_spare(&mut r, &blocks, 31);
        t.claim(9);
        r.adopt_claims();
        assert_eq!(r.claims(), (2, 2));
        assert_eq!(r.kept(), 1);
        assert!(Arc::strong_count(&s) >= 2, "kept by the registry");
        assert!(Arc::ptr_eq(r.register(9, || panic!("live")).ring(), &t));
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
