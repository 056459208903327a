package dev.jfrctx.bench;

/** The JNI baseline: a native setter (bench/jni/switch.c) storing the id in a C thread-local. */
final class JniSwitch {

    static {
        String path = System.getProperty("jfrctx.bench.jni");
        if (path == null) {
            throw new IllegalStateException("-Djfrctx.bench.jni=<path to libswitch.so> is not set");
        }
        System.load(path);
    }

    private JniSwitch() {
    }

    /** Stores {@code id} as the calling thread's current context (a {@code __thread} variable). */
    static native void set(long id);

    /** Reads it back (for the sanity check in setup). */
    static native long get();
}
