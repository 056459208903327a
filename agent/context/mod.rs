//! Context store: interned maps, per-thread rings, histories.

pub mod history;
pub mod repo;
pub mod ring;
