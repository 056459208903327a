package dev.jfrctx.agent;

import java.nio.ByteBuffer;

/**
 * Native entry points of the jfrctx agent. This class is compiled into the agent library and
 * defined by the agent into the bootstrap class loader at VM start; its natives are registered
 * right after. It is not API: the facade ({@code dev.jfrctx}) finds it reflectively.
 */
public final class Natives {
    private Natives() {}

    /**
     * Interns a context map. {@code kv} is {@code [k0, v0, k1, v1, ...]} sorted by key with unique
     * keys. Takes one reference on the returned id (≥ 1). {@code released} (may be null) lists ids
     * whose holders are gone; one reference is dropped per entry.
     */
    public static native long intern(String[] kv, long[] released);

    /**
     * Allocates the calling thread's transition ring ({@code capacity} entries, 0 for the
     * configured default). Returns null when the agent is not running.
     */
    public static native ByteBuffer register(long javaThreadId, int capacity);

    /**
     * Moves the calling thread, the sole holder of the ring {@code handle}, to a new ring of
     * {@code capacity} entries under the same handle (the agent asked for it in the ring's
     * header). Returns null when refused; the old ring must not be written after a non-null
     * return.
     */
    public static native ByteBuffer grow(long handle, int capacity);

    /** The owner of the ring with this handle is gone. */
    public static native void release(long handle);

    /** Hands one encoded batch of events to the agent (the bytes are copied). */
    public static native void deliver(ByteBuffer batch, int length);

    /**
     * Replaces the agent's {@code RecordingContextFilter} with the one in text form {@code spec}
     * (the syntax of the {@code filter=} agent option); null or blank removes it. Samples decided
     * from the agent's next worker round on obey it. A bad spec throws
     * {@link IllegalArgumentException} and changes nothing.
     */
    public static native void setFilter(String spec);

    /**
     * Switches delivery to in-process listeners on or off. {@code listenerThreadId} is the Java
     * thread id of the thread that polls (its own samples are never delivered).
     */
    public static native void setListening(boolean on, long listenerThreadId);

    /**
     * The next batch of samples for in-process listeners (listener batch format, see
     * ARCHITECTURE.md), waiting at most {@code timeoutMillis} (0 to 1000); null when none came.
     */
    public static native byte[] pollSamples(long timeoutMillis);
}
