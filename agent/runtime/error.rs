//! Why the agent could not load or start. `Display` is the one line the entry point prints after
//! `jfrctx: `.

use crate::options::ConfigError;

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Options(#[from] ConfigError),
    /// `JFRCTX_TEST_PANIC` names no panic point.
    #[error("JFRCTX_TEST_PANIC: {0}")]
    TestHook(String),
    #[error("this JVM is Java {0}; jfrctx needs Java 17 or newer")]
    OldJava(String),
    /// A sink (or the push sink) that cannot be opened; the message names it and the cause.
    #[error("{0}")]
    Sink(String),
    #[error("the agent is loaded twice")]
    LoadedTwice,
    #[error("cannot start the worker thread: {0}")]
    Worker(std::io::Error),
    #[error("cannot start the JFR stream ({0}); the application runs without profiling")]
    Stream(String),
}
