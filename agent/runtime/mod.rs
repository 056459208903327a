//! The one agent of the process: its state and lifecycle (`agent`), what the JNI entry points
//! call (`natives`), the worker's round (`worker`) over the pure join pipeline that the worker
//! and the benchmark share (`pipeline`), the drain pace (`pace`), the ring pools' huge pages
//! (`pages`), panic fences and the fault-test hook (`faults`) and the exit summary (`summary`).
//! May import: `options`, `jvm`, `sink`, `core`, `log`, `time`.

pub mod agent;
pub mod error;
pub mod faults;
pub mod natives;
pub mod pace;
pub mod pages;
pub mod pipeline;
pub mod state;
pub mod summary;
pub mod worker;
