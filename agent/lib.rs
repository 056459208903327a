//! jfrctx: a JVMTI agent that joins `RecordingContext` transitions onto JFR samples.
//!
//! The folders are the layers (ARCHITECTURE.md has the same table with each folder's files).
//! A layer imports only the layers its row names; the unit tests in `layers.rs` check it (and that
//! the module graph has no circle) on every `cargo test`.
//!
//! | module     | job                                                             | may import                 |
//! |------------|-----------------------------------------------------------------|----------------------------|
//! | `entry`    | every exported symbol (`Agent_OnLoad`, JVMTI callbacks, natives)| `runtime`, `jvm`, `log`    |
//! | `runtime/` | the one agent: global state, worker thread, lifecycle, summary  | `options`, `jvm`, `sink`, `core`, `log`, `time` |
//! | `jvm/`     | JVMTI, JNI and the JFR stream bridge; holds no agent state      | `core`, `log`              |
//! | `options/` | the option string and `config=` file → `Config`                 | `sink`, `core`, `log`      |
//! | `sink/`    | one file per output format over one shared base                 | `core`, `log`, `time`      |
//! | `core/`    | pure: model, units, clock calibration, batch, context store, join, filter, events, values | `log` |
//! | `log`      | leveled `jfrctx:` lines on stderr                               | —                          |
//! | `time`     | the one monotonic clock (`CLOCK_MONOTONIC`, `System.nanoTime()`)| —                          |
//!
//! FFI (`jni`, `libc`) appears only in `entry`, `jvm/`, `runtime/` and `time`.

// Unsafe code only where FFI or the shared ring memory needs it; everywhere else it is an error.
#![deny(unsafe_code)]

pub mod core;
#[allow(unsafe_code)]
pub mod entry;
#[allow(unsafe_code)]
pub mod jvm;
pub mod log;
pub mod options;
pub mod runtime;
pub mod sink;
#[allow(unsafe_code)]
pub mod time;

#[cfg(test)]
mod layers;
