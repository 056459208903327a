package dev.jfrctx.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The producer side of one thread's transition ring (layout and protocol: ARCHITECTURE.md, "Thread
 * ring"). Only the owning thread may call {@link #transition}. <b>Not API</b>.
 *
 * <p>The ring is accessed only through a {@code long[]} byte-buffer view {@link VarHandle} in
 * native byte order: no JNI call, no lock, no allocation per transition.
 */
public final class ThreadLog {

    /** Byte offsets of the header fields. */
    static final int HEAD = 0;
    static final int TAIL = 8;
    static final int CURRENT = 16;
    static final int CAPACITY = 24;
    static final int THREAD_ID = 32;
    static final int HANDLE = 40;
    static final int ENTRIES = 64;
    static final int ENTRY_SIZE = 16;

    private static final VarHandle LONGS =
            MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());

    private final ByteBuffer ring;
    private final long mask;
    private final long handle;
    /** Transitions written so far; only the owning thread touches it. */
    private long n;

    /**
     * Wraps a ring whose header ({@code capacity}, {@code handle}) is already initialised. Reads
     * {@code capacity} and {@code handle} once; continues after the entries already counted in
     * {@code head}.
     *
     * @param ring a direct buffer of at least {@code 64 + 16 * capacity} bytes
     * @throws IllegalArgumentException when the buffer is not direct, is too small, or
     *     {@code capacity} is not a positive power of two
     */
    public ThreadLog(ByteBuffer ring) {
        if (!ring.isDirect() || ring.isReadOnly()) {
            throw new IllegalArgumentException("jfrctx: ring must be a writable direct buffer");
        }
        if (ring.capacity() < ENTRIES) {
            throw new IllegalArgumentException("jfrctx: ring too small: " + ring.capacity() + " bytes");
        }
        ring = ring.duplicate().clear(); // indices are absolute; ignore the caller's position/limit
        long capacity = (long) LONGS.get(ring, CAPACITY);
        if (capacity <= 0 || (capacity & (capacity - 1)) != 0
                || capacity > (ring.capacity() - ENTRIES) / ENTRY_SIZE) {
            throw new IllegalArgumentException("jfrctx: bad ring capacity " + capacity
                    + " for a buffer of " + ring.capacity() + " bytes");
        }
        this.ring = ring;
        this.mask = capacity - 1;
        this.handle = (long) LONGS.get(ring, HANDLE);
        this.n = (long) LONGS.getAcquire(ring, HEAD) >>> 1;
    }

    /**
     * Registers a ring for the calling thread with the agent.
     *
     * @return the thread's log, or null when there is no agent, it is stopped, or it failed
     */
    static ThreadLog openForCurrentThread() {
        @SuppressWarnings("deprecation") // Thread.threadId() is JDK 19+; same value
        long tid = Thread.currentThread().getId();
        ByteBuffer ring = AgentLink.register(tid, 0);
        if (ring == null) {
            return null;
        }
        ThreadLog log;
        try {
            log = new ThreadLog(ring);
        } catch (RuntimeException e) {
            AgentLink.fail("Natives.register (unusable ring)", e);
            return null;
        }
        Reclamation.releaseRingWhenUnreachable(log, log.handle);
        return log;
    }

    /**
     * Appends the transition to context {@code id} (timestamped with {@link System#nanoTime()}) and
     * publishes {@code id} as the thread's current context.
     *
     * @param id the context id installed from now on
     */
    public void transition(long id) {
        long n = this.n;
        int entry = ENTRIES + ENTRY_SIZE * (int) (n & mask);
        LONGS.setRelease(ring, HEAD, 2 * n + 1);
        // The entry's stores must not become visible before the odd head (seqlock writer).
        VarHandle.storeStoreFence();
        long t = System.nanoTime();
        LONGS.set(ring, entry, t);
        LONGS.set(ring, entry + 8, id);
        LONGS.setRelease(ring, HEAD, 2 * n + 2);
        LONGS.setRelease(ring, CURRENT, id);
        this.n = n + 1;
    }

    /**
     * Returns the number of transitions written (including those counted in {@code head} when
     * this log was created).
     *
     * @return the count
     */
    public long transitions() {
        return n;
    }

    /**
     * Returns the ring's registry handle.
     *
     * @return the handle read at creation
     */
    public long handle() {
        return handle;
    }
}
