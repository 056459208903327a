package dev.jfrctx.agent;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Spare rings: rings the agent made in advance ({@code Natives.spares}), which a thread's first
 * context takes without a JNI call. The thread claims one by writing its id into the ring's
 * header ({@link RingWriter#claim}); the agent registers the ring as that thread's at its next
 * look (ARCHITECTURE.md, "Spare rings"). Rings travel as addresses and are written through
 * {@link RingWriter}: no {@code ByteBuffer} is made per ring. One class in the boot loader for
 * every copy of the facade, like {@link Definitions}.
 *
 * <p>One thread, one ring, whichever copies of the facade write on it: a thread that holds a ring
 * (taken here, or registered through {@code Natives.register} and announced with
 * {@link #joined}) is marked, and a marked thread takes no spare ({@link #take} returns 0) — its
 * other copies register through {@code Natives.register}, which finds the same ring. The mark
 * counts the copies holding the ring on this thread; it goes when the last one hands the ring
 * back ({@link #left}). A copy whose holder is released by its Cleaner (from another thread)
 * cannot lower the count: the mark then outlives the ring, and later copies on that thread only
 * pay a JNI registration, which gives them a new ring.
 *
 * <p>Only with the agent option {@code spares=on}: otherwise {@code Natives.spares} answers null
 * once and every take returns 0 from then on (threads register through JNI).
 *
 * <p>Spares wait in batches of {@link #TARGET}; a take is one atomic increment on its batch.
 * Refilled off the application's threads: the take that leaves {@link #LOW} in the last batch
 * wakes the pool's daemon thread ({@code jfrctx-rings}, started by the stream bridge once a spare
 * was taken), which adds a batch with one {@code Natives.spares} call. Only a take that finds none left (a burst beyond
 * that) asks for {@link #TARGET} rings itself. Few spares wait, on purpose: each is 16 KiB at the
 * default ring size, and the agent looks at each one's header in every round.
 *
 * <p>Spares are handed out in the order the agent made them, which is the order in which it looks
 * for claims: one refill at a time ({@link #refill}), each batch queued before the next is asked
 * for. A thread that claims a spare after handing its previous ring back thus always claims a
 * later one, and the agent adopts a thread's claims in the order it made them (a later claim
 * replaces the earlier ring). Not API.
 */
public final class RingPool {
    private RingPool() {}

    /** Byte offset of the ring's handle in the header. */
    private static final long HANDLE = 40;

    /** Spares per batch. */
    static final int TARGET = 64;
    /** When this many are left in the last batch, the take wakes the refiller. */
    static final int LOW = 32;

    /** Spares from one {@code Natives.spares} call, taken in order. */
    private static final class Batch {
        final long[] rings;
        final AtomicInteger next = new AtomicInteger();

        Batch(long[] rings) {
            this.rings = rings;
        }
    }

    private static final ConcurrentLinkedQueue<Batch> BATCHES = new ConcurrentLinkedQueue<>();
    /** Batches in {@link #BATCHES} (about: updated next to the queue, not with it). */
    private static final AtomicInteger QUEUED = new AtomicInteger();

    /** The ring this thread holds, and how many facade copies on it hold it. */
    private static final class Mark {
        final long handle;
        int holders = 1;

        Mark(long handle) {
            this.handle = handle;
        }
    }

    private static final ThreadLocal<Mark> MARK = new ThreadLocal<>();

    /** The refilling daemon thread, once started (by {@link #startRefillerIfWanted}). */
    private static volatile Thread refiller;

    /**
     * Takes a spare ring for the calling thread and claims it.
     *
     * @param javaThreadId the calling thread's id
     * @return the ring's address (its header's handle and capacity set), or 0 when the thread
     *     already holds a ring (register through {@code Natives.register} instead), or none
     *     could be had
     * @throws Throwable never: declared by the ring writer's method handles
     */
    public static long take(long javaThreadId) throws Throwable {
        if (disabled || MARK.get() != null) {
            return 0;
        }
        long ring = poll();
        if (ring == 0) {
            refill();
            ring = poll();
            if (ring == 0) {
                return 0;
            }
        }
        RingWriter.claim(ring, javaThreadId);
        MARK.set(new Mark(RingWriter.get(ring + HANDLE)));
        if (refiller == null && !wanted) {
            wanted = true;
        }
        // A safepoint poll between the claim and the caller's first transition, as the JNI
        // registration has on its way back (see SafepointPoll).
        SafepointPoll.here();
        return ring;
    }

    /** The next waiting spare's address, 0 when none is left. */
    private static long poll() {
        Batch b;
        while ((b = BATCHES.peek()) != null) {
            int i = b.next.getAndIncrement();
            int n = b.rings.length;
            if (i < n) {
                if (i == n - LOW && QUEUED.get() <= 1) {
                    wake();
                }
                return b.rings[i];
            }
            if (BATCHES.remove(b)) { // only one of the takes that found it empty
                QUEUED.decrementAndGet();
            }
        }
        return 0;
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

    /** A spare was taken: the stream bridge should start the refiller. */
    private static volatile boolean wanted;

    private static void wake() {
        Thread r = refiller;
        if (r != null) {
            LockSupport.unpark(r);
        } else if (!wanted) {
            wanted = true;
        }
    }

    /**
     * Called by the stream bridge after each delivery (on its own thread): starts the refiller
     * once a spare was taken. Not from the taking thread, which may be a web application's: a
     * thread keeps its creator's context class loader and access-control context (the protection
     * domains of the classes on its creator's stack), which would keep that application's class
     * loader alive after it is undeployed. Until then a take that finds none left refills itself.
     */
    static void startRefillerIfWanted() {
        if (!wanted || refiller != null) {
            return;
        }
        try {
            Thread t = new Thread(null, RingPool::refillLoop, "jfrctx-rings", 0, false);
            t.setContextClassLoader(null);
            t.setDaemon(true);
            t.start();
            refiller = t;
        } catch (Throwable cannot) { // e.g. no more threads: takes refill themselves
            wanted = false;
        }
    }

    /** The refiller: sleeps until woken (or a second), then adds a batch if one is missing. */
    private static void refillLoop() {
        while (true) {
            LockSupport.parkNanos(1_000_000_000L);
            if (QUEUED.get() < 2) {
                refill(); // none once the agent has stopped: the takes then register
            }
        }
    }

    /** The agent makes no spares (its option {@code spares} is off): every take returns 0. */
    private static volatile boolean disabled;

    /**
     * Held from asking the agent for a batch until that batch is queued: batches are queued in
     * the order the agent made them (see the class comment). Never waited for: a take that finds
     * a refill under way registers through JNI instead.
     */
    private static final ReentrantLock REFILLING = new ReentrantLock();

    /** Asks the agent for a batch of spares; false when it gave none (or a refill is under way). */
    private static boolean refill() {
        if (!REFILLING.tryLock()) {
            return false;
        }
        try {
            long[] rings;
            try {
                rings = Natives.spares(TARGET);
            } catch (Throwable t) { // the agent refused (e.g. an error it reported): no spares
                return false;
            }
            if (rings == null) {
                disabled = true;
                return false;
            }
            if (rings.length == 0) {
                return false;
            }
            QUEUED.incrementAndGet();
            BATCHES.add(new Batch(rings));
            return true;
        } finally {
            REFILLING.unlock();
        }
    }
}
