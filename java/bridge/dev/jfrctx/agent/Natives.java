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
     *
     * @param kv the map's keys and values, alternating, sorted by key
     * @param released ids whose holders are gone, or null
     * @return the map's id, 0 when the agent is not running
     */
    public static native long intern(String[] kv, long[] released);

    /**
     * Allocates the calling thread's transition ring ({@code capacity} entries, 0 for the
     * configured default). Returns null when the agent is not running.
     *
     * @param javaThreadId the calling thread's {@code Thread.threadId()}
     * @param capacity entries, a power of two, or 0 for the configured default
     * @return the ring's memory, or null
     */
    public static native ByteBuffer register(long javaThreadId, int capacity);

    /**
     * {@link #register} for a facade that writes through {@link RingWriter}: the same ring, as
     * its address, without the {@code DirectByteBuffer} the JNI call would have to construct (a
     * Java constructor call from native code, about as costly as the rest of the registration).
     *
     * @param javaThreadId the calling thread's {@code Thread.threadId()}
     * @param capacity entries, a power of two, or 0 for the configured default
     * @return the ring's address (header set: capacity, thread id, handle), 0 when the agent is
     *     not running
     */
    public static native long registerAddress(long javaThreadId, int capacity);

    /**
     * The agent's spare queue, from which a thread's first context takes a ring without a JNI
     * call ({@link RingPool}, {@link RingWriter#reserveSpare}); asking for it the first time starts
     * its keeping (the agent's worker tops it up every round).
     *
     * @return the queue's address (layout: ARCHITECTURE.md, "Spare rings"), 0 when the agent
     *     makes no spares ({@code spares=off}); before the agent runs, an empty queue it tops up
     *     once it does
     */
    public static native long spareQueue();

    /**
     * Moves the calling thread, the sole holder of the ring {@code handle}, to a new ring of
     * {@code capacity} entries under the same handle (the agent asked for it in the ring's
     * header). Returns null when refused; the old ring must not be written after a non-null
     * return.
     *
     * @param handle the ring's handle (in its header)
     * @param capacity entries of the new ring, a power of two
     * @return the new ring's memory, or null when refused
     */
    public static native ByteBuffer grow(long handle, int capacity);

    /**
     * {@link #grow}, the new ring as its address, for the facade's ring writer: no Java object is
     * made, so a non-zero return is the only change (a StackOverflowError is thrown, if at all,
     * before the agent moves).
     *
     * @param handle the ring's handle (in its header)
     * @param capacity entries of the new ring, a power of two
     * @return the new ring's address, or 0 when refused
     */
    public static native long growAddress(long handle, int capacity);

    /**
     * The agent's long-sleep word (8 bytes, native order, read-only): non-zero while its worker
     * sleeps longer than the drain interval because every ring was idle.
     *
     * @return the word as a direct buffer
     */
    public static native ByteBuffer wakeWord();

    /**
     * Clears the long-sleep word and wakes the agent's worker for a round now: the calling thread
     * reached a half lap of its ring while the word was set.
     */
    public static native void wake();

    /**
     * The owner of the ring with this handle is gone.
     *
     * @param handle the ring's handle
     */
    public static native void release(long handle);

    /**
     * Hands one encoded batch of events to the agent (the bytes are copied).
     *
     * @param batch a direct buffer holding the batch from position 0
     * @param length the batch's length in bytes
     */
    public static native void deliver(ByteBuffer batch, int length);

    /**
     * Replaces the agent's {@code RecordingContextFilter} with the one in text form {@code spec}
     * (the syntax of the {@code filter=} agent option); null or blank removes it. Samples decided
     * from the agent's next worker round on obey it. A bad spec throws
     * {@link IllegalArgumentException} and changes nothing.
     *
     * @param spec the filter in the {@code filter=} syntax, or null
     */
    public static native void setFilter(String spec);

    /**
     * Switches delivery to in-process listeners on or off. {@code listenerThreadId} is the Java
     * thread id of the thread that polls (its own samples are never delivered).
     *
     * @param on whether listeners receive samples
     * @param listenerThreadId the polling thread's id
     */
    public static native void setListening(boolean on, long listenerThreadId);

    /**
     * The next batch of samples for in-process listeners (listener batch format, see
     * ARCHITECTURE.md), waiting at most {@code timeoutMillis} (0 to 1000); null when none came.
     *
     * @param timeoutMillis how long to wait, in milliseconds
     * @return the batch, or null
     */
    public static native byte[] pollSamples(long timeoutMillis);
}
