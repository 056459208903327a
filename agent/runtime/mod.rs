//! The one agent of the process: its state and lifecycle (`agent`), the worker's round, the join
//! pipeline the worker and the benchmark share (`pipeline`), the drain pace (`pace`) and the exit
//! summary (`summary`). May import: `options`, `jvm`, `sink`, `core`, `log`, `time`.

pub mod agent;
pub mod pace;
pub mod summary;
