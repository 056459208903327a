package dev.jfrctx.internal;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import dev.jfrctx.agent.Natives;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs in a child JVM whose boot class path holds the fake {@link Natives} and the agent's real
 * {@code RingWriter} and {@code RingPool}: a thread's first context takes a spare ring (no
 * {@code Natives.register}), claims it with its id, and a thread holding a ring takes no second
 * one. Exits non-zero on the first failed check. Started by {@link AgentModeTest}.
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

        // The first context takes a spare: one batch asked for, no registration.
        try (RecordingContext c = RecordingContext.where(K, "a").build()) {
            check(ThreadState.current().log().usesRingWriter(), "a spare is written through the ring writer");
        }
        equal(1, Natives.SPARE_CALLS.size(), "one Natives.spares call");
        equal(64, Natives.SPARE_CALLS.get(0), "for a batch of 64");
        equal(0, Natives.REGISTERED_THREADS.size(), "no Natives.register call");
        ByteBuffer first = Natives.SPARES.get(0);
        equal(tid + 1, first.getLong(16), "the spare is claimed with the thread's id + 1");
        equal(4, first.getLong(0), "two transitions (head = 2n) on the spare");
        equal(5000, ThreadState.current().log().handle(), "the log has the spare's handle");

        // A thread that holds a ring gets no second spare (another facade copy on it registers).
        equal(0, AgentLink.takeSpare(tid), "no second spare for a thread holding one");

        // Fresh threads take the next spares in order, each claimed with its own id.
        List<Long> ids = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            Thread t = new Thread(() -> {
                try (RecordingContext c = RecordingContext.where(K, "b").build()) {
                    // one context
                }
            });
            t.start();
            t.join();
            ids.add(t.getId());
        }
        equal(0, Natives.REGISTERED_THREADS.size(), "fresh threads do not register");
        for (int i = 0; i < ids.size(); i++) {
            equal(ids.get(i) + 1, Natives.SPARES.get(i + 1).getLong(16), "spare " + (i + 1) + "'s claim");
        }

        // The stream bridge starts the refiller after a delivery, on its own thread; the refiller
        // adds a batch when fewer than two are queued.
        java.lang.reflect.Method start = Class.forName("dev.jfrctx.agent.RingPool", true, null)
                .getDeclaredMethod("startRefillerIfWanted");
        start.setAccessible(true);
        Thread bridge = new Thread(() -> {
            try {
                start.invoke(null);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }, "bridge");
        bridge.start();
        bridge.join();
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (Natives.SPARE_CALLS.size() < 2) {
            check(System.nanoTime() < deadline, "the refiller adds a batch (calls: " + Natives.SPARE_CALLS + ")");
            Thread.sleep(10);
        }
        Thread refiller = null;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().equals("jfrctx-rings")) {
                refiller = t;
            }
        }
        check(refiller != null && refiller.isDaemon(), "the refiller is the daemon thread jfrctx-rings");
        check(refiller.getContextClassLoader() == null, "the refiller holds no class loader");
        equal(1, Natives.SPARE_CALLS.size() - 1, "one more batch, not one per take");

        // The per-thread mark counts the copies holding a registered ring; the last to leave clears it.
        long[] taken = new long[1];
        Thread copies = new Thread(() -> {
            long me = Thread.currentThread().getId();
            AgentLink.joined(777);
            AgentLink.joined(777);
            AgentLink.left(777);
            taken[0] = AgentLink.takeSpare(me);
            AgentLink.left(777);
            check(taken[0] == 0, "a thread with a holder left takes no spare");
            taken[0] = AgentLink.takeSpare(me);
        });
        copies.start();
        copies.join();
        check(taken[0] != 0, "after the last holder left, the thread takes a spare");
        check(Natives.RELEASED_HANDLES.isEmpty(), "nothing released through Natives.release");
        System.out.println("agent-mode OK");
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
