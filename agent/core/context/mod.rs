//! Context store: interned maps (`repo`), the per-thread shared transition rings (`ring`), which
//! ring each live thread writes to (`registry`, with the `spares` queue Java takes rings from),
//! the per-thread histories drained from them (`history`), and a map by id for ids handed out in
//! order (`ids`, its window in chunks: `slots`). Pure cores; `join` puts them together.

pub mod history;
pub mod ids;
pub mod registry;
pub mod repo;
/// The one core module with unsafe code: the ring is memory shared with Java writers.
#[allow(unsafe_code)]
pub mod ring;
pub mod slots;
pub mod spares;
