//! Pure cores: what a sample and a context are (`model`), option units (`units`), the JFR tick
//! calibration (`clock`), the bridge's batch format (`batch`), the context store (`context`),
//! the join (`join`), the filter (`filter`), the JFR event table and selection (`events`) and
//! what a sample is worth (`value`). No FFI, no global state: every function is testable on its
//! own. May import: `log` only.

pub mod batch;
pub mod carrier;
pub mod clock;
pub mod context;
pub mod events;
pub mod filter;
pub mod join;
pub mod kind;
pub mod model;
pub mod units;
pub mod value;
