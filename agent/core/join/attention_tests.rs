//! The drain's writes into each ring's attention word: the wake hint follows what the worker
//! asks for, and a growth request keeps it.

use super::*;
use crate::core::context::ring::Producer;

#[test]
fn each_drain_sets_or_clears_every_rings_wake_hint() {
    let mut j = Joiner::new(1_000_000, 100);
    let rings: Vec<Arc<Ring>> = (1..=3)
        .map(|t| Arc::new(Ring::new(16, t, t + 100)))
        .collect();
    for r in &rings {
        j.add_ring(Arc::clone(r));
    }
    j.drain(1_000);
    assert!(rings.iter().all(|r| !r.wake_hinted()), "clear by default");
    j.set_wake_hint(true);
    j.drain(2_000);
    assert!(
        rings.iter().all(|r| r.wake_hinted()),
        "the worker sleeps long: every ring told"
    );
    j.set_wake_hint(false);
    j.drain(3_000);
    assert!(
        rings.iter().all(|r| !r.wake_hinted()),
        "awake again: every hint cleared"
    );
}

#[test]
fn a_growth_request_keeps_the_hint_and_the_hint_keeps_the_request() {
    let mut j = Joiner::new(1_000_000, 100);
    let ring = Arc::new(Ring::new(16, 1, 101));
    j.add_ring(Arc::clone(&ring));
    let mut p = Producer::new(Arc::clone(&ring));
    j.set_wake_hint(true);
    for i in 0..8 {
        p.push(10 + i, 5); // half the ring: the drain asks for ×4
    }
    j.drain(1_000);
    assert_eq!(ring.growth_requested(), 64);
    assert!(ring.wake_hinted());
    j.set_wake_hint(false);
    j.drain(2_000);
    assert_eq!(ring.growth_requested(), 64);
    assert!(!ring.wake_hinted());
}
