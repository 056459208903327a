//! The JVM side: the JVMTI wrapper (`jvmti`) and the JFR stream bridge (`stream`: the embedded
//! bridge classes, their natives and the JNI calls that start and stop the stream). Holds no
//! agent state. May import: `core`, `log`.

pub mod jvmti;
pub mod stream;
