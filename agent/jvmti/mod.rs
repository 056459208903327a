//! JVMTI.
