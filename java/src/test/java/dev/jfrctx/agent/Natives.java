package dev.jfrctx.agent;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A Java stand-in for the agent's natives, same signatures. {@code AgentModeTest} puts only this
 * class on a child JVM's boot class path (where the real agent defines its own), so that the facade
 * runs its live-agent path against it. On an ordinary class path it is invisible to the facade,
 * which looks in the bootstrap loader only.
 */
public final class Natives {

    /** Entries in each fake ring. */
    public static final int CAPACITY = 16;

    /** Every {@code kv} passed to {@link #intern}, in call order. */
    public static final List<String[]> INTERNED = Collections.synchronizedList(new ArrayList<>());
    /** Every non-null {@code released} id passed to {@link #intern}. */
    public static final List<Long> RELEASED_IDS = Collections.synchronizedList(new ArrayList<>());
    /** Every ring handed out by {@link #register}, in call order. */
    public static final List<ByteBuffer> RINGS = Collections.synchronizedList(new ArrayList<>());
    /** Every thread id passed to {@link #register}. */
    public static final List<Long> REGISTERED_THREADS = Collections.synchronizedList(new ArrayList<>());
    /** Every handle passed to {@link #release}. */
    public static final List<Long> RELEASED_HANDLES = Collections.synchronizedList(new ArrayList<>());
    /** When set, {@link #intern} throws. */
    public static volatile boolean failIntern;
    /**
     * When set, registrations are refused as the agent refuses them when it is not running (not
     * started yet, or stopped at VMDeath): {@link #register} returns null and
     * {@link #registerAddress} 0, and nothing is recorded.
     */
    public static volatile boolean refuseRegistrations;

    private Natives() {
    }

    /**
     * Records the call; ids are 1, 2, 3, ... in call order.
     *
     * @param kv the map
     * @param released ids released, or null
     * @return the new id
     */
    public static long intern(String[] kv, long[] released) {
        if (failIntern) {
            throw new IllegalStateException("fake intern failure");
        }
        if (released != null) {
            for (long id : released) {
                RELEASED_IDS.add(id);
            }
        }
        synchronized (INTERNED) {
            INTERNED.add(kv.clone());
            return INTERNED.size();
        }
    }

    /**
     * Allocates a ring of {@link #CAPACITY} entries; handles are 1000, 1001, ... in call order.
     *
     * @param javaThreadId the caller's thread id
     * @param capacity requested capacity (ignored)
     * @return the ring, null while {@link #refuseRegistrations}
     */
    public static ByteBuffer register(long javaThreadId, int capacity) {
        if (refuseRegistrations) {
            return null;
        }
        ByteBuffer ring = ByteBuffer.allocateDirect(64 + 16 * CAPACITY).order(ByteOrder.nativeOrder());
        synchronized (RINGS) {
            ring.putLong(24, CAPACITY);
            ring.putLong(32, javaThreadId);
            ring.putLong(40, 1000 + RINGS.size());
            RINGS.add(ring);
            REGISTERED_THREADS.add(javaThreadId);
        }
        return ring;
    }

    /** Of {@link #REGISTERED_THREADS}, those registered through {@link #registerAddress}. */
    public static final List<Long> ADDRESS_REGISTRATIONS = Collections.synchronizedList(new ArrayList<>());

    /**
     * {@link #register}'s ring as its address (the agent's {@code registerAddress}, which the
     * facade calls when it writes through the ring writer); recorded in {@link #RINGS} as well.
     *
     * @param javaThreadId the caller's thread id
     * @param capacity requested capacity (ignored)
     * @return the ring's address, 0 while {@link #refuseRegistrations}
     */
    public static long registerAddress(long javaThreadId, int capacity) {
        if (refuseRegistrations) {
            return 0;
        }
        ADDRESS_REGISTRATIONS.add(javaThreadId);
        return address(register(javaThreadId, capacity));
    }

    /**
     * The address of a direct buffer, through the agent's RingWriter beside this class.
     *
     * @param ring a direct buffer
     * @return its address
     */
    public static long address(ByteBuffer ring) {
        try {
            return (long) Class.forName("dev.jfrctx.agent.RingWriter", true, null)
                    .getMethod("address", ByteBuffer.class).invoke(null, ring);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Every ring handed out by {@link #grow}. */
    public static final List<ByteBuffer> GROWN = Collections.synchronizedList(new ArrayList<>());

    /**
     * A new ring of {@code capacity} entries under the same handle (as the agent does for the sole
     * holder of a ring).
     *
     * @param handle the ring's handle
     * @param capacity entries asked for
     * @return the new ring
     */
    public static ByteBuffer grow(long handle, int capacity) {
        ByteBuffer ring = ByteBuffer.allocateDirect(64 + 16 * capacity).order(ByteOrder.nativeOrder());
        ring.putLong(24, capacity);
        ring.putLong(40, handle);
        GROWN.add(ring);
        return ring;
    }

    /** Every spare ring published on the queue, in order (kept alive here). */
    public static final List<ByteBuffer> SPARES = Collections.synchronizedList(new ArrayList<>());
    /** Calls of {@link #spareQueue}. */
    public static final List<Long> SPARE_QUEUE_CALLS = Collections.synchronizedList(new ArrayList<>());
    /** Slots of the fake spare queue. */
    public static final int QUEUE_SLOTS = 128;
    /**
     * The spare queue, laid out as the agent's: head, slots, the spares' capacity at word 2, tail
     * at word 8, from word 16 two words per slot (address, handle).
     */
    private static final ByteBuffer QUEUE = ByteBuffer.allocateDirect(8 * (16 + 2 * QUEUE_SLOTS))
            .order(ByteOrder.nativeOrder()).putLong(8, QUEUE_SLOTS).putLong(16, CAPACITY);

    /**
     * The spare queue, with 64 spares published on the first call, as the agent tops it up.
     *
     * @return its address
     */
    public static long spareQueue() {
        synchronized (SPARES) {
            if (SPARE_QUEUE_CALLS.isEmpty()) {
                publishSpares(64);
            }
            SPARE_QUEUE_CALLS.add(1L);
        }
        return address(QUEUE);
    }

    /**
     * Publishes {@code n} more spare rings of {@link #CAPACITY} entries (handles 5000, 5001, ...
     * in order), claim and thread id 0, as the agent's worker does.
     *
     * @param n how many
     */
    public static void publishSpares(int n) {
        synchronized (SPARES) {
            long tail = QUEUE.getLong(64);
            for (int i = 0; i < n; i++) {
                ByteBuffer ring = ByteBuffer.allocateDirect(64 + 16 * CAPACITY).order(ByteOrder.nativeOrder());
                ring.putLong(24, CAPACITY);
                ring.putLong(40, 5000 + SPARES.size());
                SPARES.add(ring);
                int slot = 128 + 16 * (int) ((tail + i) % QUEUE_SLOTS);
                QUEUE.putLong(slot, address(ring)).putLong(slot + 8, 5000 + SPARES.size() - 1);
            }
            QUEUE.putLong(64, tail + n); // the tests publish before they start the taking threads
        }
    }

    /**
     * Spares taken from the queue so far.
     *
     * @return the queue's head
     */
    public static long sparesTaken() {
        return QUEUE.getLong(0);
    }

    /**
     * Records the call.
     *
     * @param handle the ring handle
     */
    public static void release(long handle) {
        RELEASED_HANDLES.add(handle);
    }

    /** Calls of {@link #wake} so far. */
    public static final java.util.concurrent.atomic.AtomicInteger WAKES =
            new java.util.concurrent.atomic.AtomicInteger();

    /** The worker's long-sleep word (set by the test, as by the agent's worker). */
    public static final ByteBuffer WAKE_WORD =
            ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());

    /** The agent's word for {@code WorkerWake}. */
    public static ByteBuffer wakeWord() {
        return WAKE_WORD;
    }

    /** Counts the call and clears the word, as the agent does before it ends its worker's sleep. */
    public static void wake() {
        WAKES.incrementAndGet();
        WAKE_WORD.putLong(0, 0);
    }

    /**
     * Not used by the facade.
     *
     * @param batch ignored
     * @param length ignored
     */
    public static void deliver(ByteBuffer batch, int length) {
    }
}
