package dev.jfrctx.agent;

/**
 * Spare rings: rings the agent made in advance and published on its spare queue
 * ({@code Natives.spareQueue}), from which a thread's first context takes one without a JNI call
 * ({@link RingWriter#reserveSpare}: a compare-and-set on the queue's memory). The thread claims
 * it by writing its id into the ring's header with its first transition
 * ({@link RingWriter#claimFirst}); the agent registers the ring as that thread's at its next look
 * (ARCHITECTURE.md, "Spare rings"). The agent's worker tops the queue up every round,
 * to twice what was taken since the round before (at least 64); a take that finds none waiting
 * returns 0 and the thread registers through JNI. No thread, lock or object of this class is
 * involved in a take. One class in the boot loader for every copy of the facade, like
 * {@link Definitions}.
 *
 * <p>One thread, one ring, whichever copies of the facade write on it: a thread that holds a ring
 * (reserved here, or registered through {@code Natives.register} and announced with
 * {@link #joined}) is marked, and a marked thread takes no spare ({@link #reserve} returns 0) — its
 * other copies register through {@code Natives.register}, which finds the same ring. The mark
 * counts the copies holding the ring on this thread; it goes when the last one hands the ring
 * back ({@link #left}). A copy whose holder is released by its Cleaner (from another thread)
 * cannot lower the count: the mark then outlives the ring, and later copies on that thread only
 * pay a JNI registration, which gives them a new ring.
 *
 * <p>Not with the agent option {@code spares=off}: then {@code Natives.spareQueue} answers 0 and
 * every take returns 0 from then on (threads register through JNI).
 *
 * <p>Spares are taken in the order the agent published them, which is the order in which it
 * looks for claims: a thread that claims a spare after handing its previous ring back always
 * claims a later one, and the agent adopts a thread's claims in that order (a later claim
 * replaces the earlier ring). Not API.
 */
public final class RingPool {
    private RingPool() {}

    /** The ring this thread holds, and how many facade copies on it hold it. */
    private static final class Mark {
        final long handle;
        int holders = 1;

        Mark(long handle) {
            this.handle = handle;
        }
    }

    private static final ThreadLocal<Mark> MARK = new ThreadLocal<>();

    /** The spare queue's address; 0 until asked for, and when the agent has none. */
    private static volatile long queue;

    /** The agent makes no spares ({@code spares=off}): every take returns 0. */
    private static volatile boolean disabled;

    /** Initializes this class (at VMInit, not on a thread at the end of its stack). */
    static void initialize() {
        // The call is the point: the JVM runs the static initializer before it.
    }

    /**
     * Reserves a spare ring for the calling thread, which claims it with its first transition
     * ({@link RingWriter#claimFirst}, before any other write to the ring).
     *
     * @param out receives the ring's handle ({@code out[0]}) and capacity ({@code out[1]})
     * @return the ring's address, or 0 when the thread already holds a ring (register through
     *     {@code Natives.register} instead), or none was waiting
     * @throws Throwable never: declared by the ring writer's method handles
     */
    public static long reserve(long[] out) throws Throwable {
        if (disabled || MARK.get() != null) {
            return 0;
        }
        long q = queue;
        if (q == 0 && (q = open()) == 0) {
            return 0;
        }
        long ring = RingWriter.reserveSpare(q, out);
        if (ring == 0) {
            return 0;
        }
        MARK.set(new Mark(out[0]));
        // A safepoint poll between the take and the caller's first transition, as the JNI
        // registration has on its way back (see SafepointPoll).
        SafepointPoll.here();
        return ring;
    }

    /**
     * Takes a spare ring for the calling thread and claims it at once: {@link #reserve} and
     * {@link RingWriter#claim}, for facades built before {@link #reserve}.
     *
     * @param javaThreadId the calling thread's id
     * @return the ring's address (its header's handle and capacity set), or 0 as {@link #reserve}
     * @throws Throwable never: declared by the ring writer's method handles
     */
    public static long take(long javaThreadId) throws Throwable {
        long ring = reserve(new long[2]);
        if (ring != 0) {
            RingWriter.claim(ring, javaThreadId);
        }
        return ring;
    }

    /** Asks the agent for its spare queue, once: its address, 0 when it has none. */
    private static synchronized long open() {
        if (queue == 0 && !disabled) {
            long q;
            try {
                q = Natives.spareQueue();
            } catch (Throwable t) { // the agent refused (e.g. an error it reported): no spares
                q = 0;
            }
            if (q == 0) {
                disabled = true;
            }
            queue = q;
        }
        return queue;
    }

    /**
     * A facade copy on the calling thread now holds ring {@code handle}, registered through
     * {@code Natives.register}.
     *
     * @param handle the ring's handle
     */
    public static void joined(long handle) {
        if (disabled) {
            return; // no spares: nothing to keep a thread from taking one
        }
        Mark m = MARK.get();
        if (m != null && m.handle == handle) {
            m.holders++;
        } else {
            // No mark, or one whose ring is gone (the registration gave another ring).
            MARK.set(new Mark(handle));
        }
    }

    /**
     * A facade copy on the calling thread handed ring {@code handle} back (and writes it no
     * more).
     *
     * @param handle the ring's handle
     */
    public static void left(long handle) {
        if (disabled) {
            return;
        }
        Mark m = MARK.get();
        if (m != null && m.handle == handle && --m.holders == 0) {
            MARK.remove();
        }
    }
}
