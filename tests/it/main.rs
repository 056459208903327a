//! The integration tests: one binary, one module per concern. Each runs real JVMs (JDK 17, 21,
//! 25) with the agent through the harness in `common`.
//!
//! Run one concern with `cargo test --test it MODULE::` (e.g. `cargo test --test it otel::`),
//! one test by its path (`cargo test --test it ground_truth::ground_truth_jdk17`); `--nocapture`
//! prints the figures the tests measure. The heavy JVM runs take `common::serial()`, one lock
//! for the whole binary: the machine has two cores, and parallel sampled JVMs would only starve
//! each other. The light ones (`bad_input`, `options`: refused starts, short runs) take
//! `common::light()`, the shared side of that lock: two at a time, never beside a heavy run.

mod common;
mod fake_pyroscope;

mod app_server;
mod bad_input;
mod bench_baseline;
mod carriers;
mod coexistence;
mod definition_log;
mod events;
mod exact_frames;
mod exit_paths;
mod faults;
mod filter_listener;
mod ground_truth;
mod idle_burst;
mod jfr_file;
mod long_wait;
mod multi_copy;
mod no_thread;
mod options;
mod otel;
mod otel_sdk;
mod propagation;
mod push;
mod ring_lifetime;
mod sink_values;
mod sinks;
mod virtual_threads;
