package dev.jfrctx.internal;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import dev.jfrctx.agent.Natives;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs in a child JVM whose boot class path holds the fake {@link Natives} and the agent's real
 * {@code RingWriter} and {@code RingPool}: a thread's first context takes a spare ring from the
 * spare queue (no {@code Natives.register}), in order, and claims it with its id in its first
 * transition (nothing of the ring written or read before); a thread holding a ring takes no
 * second one; a thread that finds the queue empty registers. Exits non-zero on
 * the first failed check. Started by {@link AgentModeTest}.
 */
public final class SpareRingsMain {

    private static final RecordingContextKey K = RecordingContextKey.forName("k");

    private SpareRingsMain() {
    }

    @SuppressWarnings("deprecation") // Thread.getId(): Thread.threadId() is JDK 19+
    public static void main(String[] args) throws Exception {
        check(Natives.class.getClassLoader() == null, "fake Natives is in the bootstrap loader");
        check(AgentLink.isLive(), "agent link is live");
        long tid = Thread.currentThread().getId();

        // The first context takes a spare: the queue asked for once, no registration.
        try (RecordingContext c = RecordingContext.where(K, "a").build()) {
            check(ThreadState.current().log().usesRingWriter(), "a spare is written through the ring writer");
        }
        equal(1, Natives.SPARE_QUEUE_CALLS.size(), "one Natives.spareQueue call");
        equal(0, Natives.REGISTERED_THREADS.size(), "no Natives.register call");
        equal(1, Natives.sparesTaken(), "one spare taken from the queue");
        ByteBuffer first = Natives.SPARES.get(0);
        equal(tid + 1, first.getLong(16), "the spare is claimed with the thread's id + 1");
        equal(4, first.getLong(0), "two transitions (head = 2n) on the spare");
        equal(5000, ThreadState.current().log().handle(), "the log has the spare's handle");

        // A thread that holds a ring gets no second spare (another facade copy on it registers).
        equal(0, AgentLink.reserveSpare(new long[2]), "no second spare for a thread holding one");
        equal(1, Natives.sparesTaken(), "nothing taken for it");

        // Fresh threads take the next spares in order, each claimed with its own id, until none
        // is left; then they register.
        List<Long> ids = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            ids.add(oneContextOnAFreshThread());
        }
        equal(1, Natives.SPARE_QUEUE_CALLS.size(), "the queue asked for once");
        equal(64, Natives.sparesTaken(), "all 64 spares taken");
        for (int i = 0; i < 63; i++) {
            equal(ids.get(i) + 1, Natives.SPARES.get(i + 1).getLong(16), "spare " + (i + 1) + "'s claim");
        }
        equal(1, Natives.REGISTERED_THREADS.size(), "the thread that found the queue empty registered");
        equal(ids.get(63), Natives.REGISTERED_THREADS.get(0), "and it was the last one");
        Natives.publishSpares(2);
        long next = oneContextOnAFreshThread();
        equal(next + 1, Natives.SPARES.get(64).getLong(16), "a spare published later is taken");
        equal(65, Natives.sparesTaken(), "from the queue");
        equal(1, Natives.REGISTERED_THREADS.size(), "no more registrations");

        // The per-thread mark counts the copies holding a registered ring; the last to leave clears it.
        long[] taken = new long[1];
        long[] reserved = new long[2];
        Thread copies = new Thread(() -> {
            AgentLink.joined(777);
            AgentLink.joined(777);
            AgentLink.left(777);
            taken[0] = AgentLink.reserveSpare(reserved);
            AgentLink.left(777);
            check(taken[0] == 0, "a thread with a holder left takes no spare");
            taken[0] = AgentLink.reserveSpare(reserved);
        });
        copies.start();
        copies.join();
        check(taken[0] != 0, "after the last holder left, the thread takes a spare");
        ByteBuffer reservedRing = Natives.SPARES.get(65);
        equal(Natives.address(reservedRing), taken[0], "the next spare in order");
        equal(5065, reserved[0], "its handle, from the queue");
        equal(Natives.CAPACITY, reserved[1], "its capacity, from the queue");
        equal(0, reservedRing.getLong(16), "a reserved spare is not claimed before a transition");
        equal(0, reservedRing.getLong(0), "nor written");
        // Releases (the Cleaners', when a GC ran) are of the ended fresh threads' rings only: the
        // registered one (1000) and spares 5001 to 5064; never the main thread's spare (5000).
        synchronized (Natives.RELEASED_HANDLES) {
            for (long h : Natives.RELEASED_HANDLES) {
                check(h == 1000 || (h >= 5001 && h <= 5064),
                        "released " + h + ", not an ended thread's ring: " + Natives.RELEASED_HANDLES);
            }
        }
        System.out.println("agent-mode OK");
    }

    /** Starts a thread that opens and closes one context; returns its id once it ended. */
    @SuppressWarnings("deprecation") // Thread.getId(): Thread.threadId() is JDK 19+
    private static long oneContextOnAFreshThread() throws InterruptedException {
        Thread t = new Thread(() -> {
            try (RecordingContext c = RecordingContext.where(K, "b").build()) {
                // one context
            }
        });
        t.start();
        t.join();
        return t.getId();
    }

    private static void equal(long expected, long actual, String what) {
        check(expected == actual, what + ": expected " + expected + ", got " + actual);
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }
}
