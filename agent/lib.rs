//! jfrctx: a JVMTI agent that joins `RecordingContext` transitions onto JFR samples.
//!
//! See ARCHITECTURE.md for the module map, threads and contracts. FFI lives only in `entry`,
//! `jvmti` and `stream`; everything else is a pure core with unit tests.

pub mod agent;
pub mod batch;
pub mod carrier;
pub mod clock;
pub mod config;
pub mod context;
pub mod entry;
pub mod events;
pub mod filter;
pub mod join;
pub mod jvmti;
pub mod log;
pub mod model;
pub mod pace;
pub mod sink;
pub mod stream;
pub mod summary;
pub mod value;
