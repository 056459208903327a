package dev.jfrctx.internal;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import dev.jfrctx.SwitchAllocation;
import dev.jfrctx.agent.Natives;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Runs in a child JVM whose boot class path holds the fake {@link Natives}: checks the facade's
 * live-agent path (interning, rings, reclamation, degradation). Exits non-zero on the first failed
 * check. Started by {@link AgentModeTest}.
 */
public final class AgentModeMain {

    private static final RecordingContextKey K = RecordingContextKey.forName("k");
    private static final RecordingContextKey J = RecordingContextKey.forName("j");

    /** Whether the child runs with the agent's ring writer (else the buffer-view fallback). */
    private static final boolean ringWriter = Boolean.getBoolean("jfrctx.test.ringWriter");

    private AgentModeMain() {
    }

    public static void main(String[] args) throws Exception {
        check(Natives.class.getClassLoader() == null, "fake Natives is in the bootstrap loader");
        check(AgentLink.isLive(), "agent link is live");
        RecordingContext.Snapshot kept = interningAndTransitions();
        equal(ringWriter ? 1 : 0, ThreadState.current().log().usesRingWriter() ? 1 : 0,
                "transitions go through the agent's ring writer");
        outOfOrderCloseWritesNothing();
        long otherThread = otherThreadGetsItsOwnRing();
        reclamation(otherThread);
        check(!Natives.RELEASED_IDS.contains(1L), "id 1 is still held by a snapshot");
        switchesAllocateNothing(kept);
        halfFullRingWakesTheAgent();
        ringGrowsWhenAsked();
        privateContextsAreReleasedAtClose();
        refusedRegistration();
        degradation();
        java.lang.ref.Reference.reachabilityFence(kept);
        System.out.println("agent-mode OK");
    }

    @SuppressWarnings("deprecation")
    private static RecordingContext.Snapshot interningAndTransitions() {
        RecordingContext c1 = RecordingContext.where(K, "1").build();
        equal(1, Natives.INTERNED.size(), "one intern for the first map");
        check(Arrays.equals(new String[] {"k", "1"}, Natives.INTERNED.get(0)), "kv of the first map");
        equal(1, Natives.RINGS.size(), "one register for the first install");
        equal(Thread.currentThread().getId(), Natives.REGISTERED_THREADS.get(0), "register's thread id");
        equal(ringWriter ? 1 : 0, Natives.ADDRESS_REGISTRATIONS.size(),
                "with the ring writer the ring comes as an address (Natives.registerAddress)");
        equal(1, Introspection.currentId(), "id of the first map");
        RecordingContext c2 = RecordingContext.where(K, "1").where(J, "2").build();
        check(Arrays.equals(new String[] {"j", "2", "k", "1"}, Natives.INTERNED.get(1)), "kv sorted by key");
        RecordingContext c3 = RecordingContext.where(J, "2").build();
        equal(2, Natives.INTERNED.size(), "no intern when the map does not change");
        c3.close();
        c2.close();
        RecordingContext.Snapshot snapshot = RecordingContext.snapshot();
        c1.close();
        try (RecordingContext.Activation activation = snapshot.activate()) {
            equal(1, Introspection.currentId(), "activated id");
        }
        RecordingContext.runWithSnapshot(() -> equal(1, Introspection.currentId(), "id in task"), snapshot);
        equal(2, Natives.INTERNED.size(), "switching existing contexts never interns");
        equal(1, Natives.RINGS.size(), "one ring per thread");
        ByteBuffer ring = Natives.RINGS.get(0);
        long[] expected = {1, 2, 2, 2, 1, 0, 1, 0, 1, 0};
        equal(2L * expected.length, ring.getLong(0), "head");
        equal(0, lastContext(ring), "current");
        long previousTime = Long.MIN_VALUE;
        for (int i = 0; i < expected.length; i++) {
            equal(expected[i], ring.getLong(64 + 16 * i + 8), "context of entry " + i);
            long time = ring.getLong(64 + 16 * i);
            check(time >= previousTime, "entry times do not go backwards");
            previousTime = time;
        }
        return snapshot;
    }

    /** Steady-state switches on a live ring allocate nothing and intern nothing new. */
    private static void switchesAllocateNothing(RecordingContext.Snapshot snapshot) {
        ByteBuffer ring = Natives.RINGS.get(0);
        long head = ring.getLong(0);
        double perOp = SwitchAllocation.activateClose(snapshot);
        check(perOp < 0.01 || !ringWriter, "activate()+close() allocates " + perOp + " B per pair");
        check(ring.getLong(0) > head, "the switches were written to the ring");
        RecordingContext.Builder builder = RecordingContext.where(K, "steady").where(J, "state");
        int interned = Natives.INTERNED.size();
        RecordingContext.Snapshot held; // keeps the map reachable: the cache holds it only weakly
        try (RecordingContext first = builder.build()) {
            held = RecordingContext.snapshot();
        }
        perOp = SwitchAllocation.buildClose(builder);
        // The buffer-view fallback (no ring writer) is checked for what it writes, not for its
        // allocation: its accesses compile too big for C2 to inline build() reliably (see
        // ThreadLog), which is why the agent's ring writer exists.
        check(perOp < 0.01 || !ringWriter, "build()+close() allocates " + perOp + " B per pair");
        equal(interned + 1, Natives.INTERNED.size(), "a map built again and again is interned once");
        equal(0, lastContext(ring), "current after the switches");
        java.lang.ref.Reference.reachabilityFence(held);
    }

    private static void outOfOrderCloseWritesNothing() {
        ByteBuffer ring = Natives.RINGS.get(0);
        RecordingContext outer = RecordingContext.where(K, "outer").build();
        RecordingContext inner = RecordingContext.where(J, "inner").build();
        long head = ring.getLong(0);
        try {
            outer.close();
            check(false, "out-of-order close throws");
        } catch (IllegalStateException expected) {
            equal(head, ring.getLong(0), "a rejected close writes no transition");
        }
        inner.close();
        outer.close();
        equal(0, lastContext(ring), "current after closing");
    }

    private static long otherThreadGetsItsOwnRing() throws InterruptedException {
        Thread thread = new Thread(() -> {
            try (RecordingContext ctx = RecordingContext.where(K, "other").build()) {
                equal(Natives.INTERNED.size(), Introspection.currentId(), "other thread's id");
            }
        }, "other");
        thread.start();
        thread.join();
        equal(2, Natives.RINGS.size(), "a second thread registers its own ring");
        @SuppressWarnings("deprecation")
        long id = thread.getId();
        equal(id, Natives.REGISTERED_THREADS.get(1), "second register's thread id");
        ByteBuffer ring = Natives.RINGS.get(1);
        equal(4, ring.getLong(0), "other ring's head");
        return ring.getLong(64 + 8);
    }

    private static void reclamation(long otherThreadsId) throws InterruptedException {
        long deadline = System.nanoTime() + 20_000_000_000L;
        for (int i = 0; ; i++) {
            System.gc();
            Thread.sleep(20);
            try (RecordingContext probe = RecordingContext.where(K, "probe" + i).build()) {
                // each new map interns once and hands over what the Cleaner queued so far
            }
            if (Natives.RELEASED_IDS.contains(2L) && Natives.RELEASED_IDS.contains(otherThreadsId)
                    && Natives.RELEASED_HANDLES.contains(1001L)) {
                break;
            }
            check(System.nanoTime() < deadline, "released ids " + Natives.RELEASED_IDS + " and handles "
                    + Natives.RELEASED_HANDLES + " should include ids 2, " + otherThreadsId + " and handle 1001");
        }
        check(!Natives.RELEASED_HANDLES.contains(1000L), "this thread's ring is not released while it lives");
    }

    /**
     * A registration the agent refuses (not running: null from {@code register}, 0 from
     * {@code registerAddress}) leaves the thread without a ring but with its contexts, and the
     * link live: a later thread registers as usual.
     */
    private static void refusedRegistration() throws InterruptedException {
        int rings = Natives.RINGS.size();
        boolean[] ok = new boolean[2];
        Natives.refuseRegistrations = true;
        try {
            Thread refused = new Thread(() -> {
                try (RecordingContext ctx = RecordingContext.where(K, "refused").build()) {
                    ok[0] = K.isBound() && Introspection.currentId() != 0
                            && ThreadState.current().log() == null;
                }
            });
            refused.start();
            refused.join();
        } finally {
            Natives.refuseRegistrations = false;
        }
        check(ok[0], "a refused registration: the context installed and interned, no ring");
        equal(rings, Natives.RINGS.size(), "no ring handed out while refused");
        check(AgentLink.isLive(), "a refusal does not degrade the link");
        Thread later = new Thread(() -> {
            try (RecordingContext ctx = RecordingContext.where(K, "later").build()) {
                ok[1] = ThreadState.current().log() != null;
            }
        });
        later.start();
        later.join();
        check(ok[1], "a thread after the refusal registers");
        equal(rings + 1, Natives.RINGS.size(), "one ring for it");
    }

    private static void degradation() {
        ByteBuffer ring = currentRing();
        PrintStream original = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        int interned = Natives.INTERNED.size();
        try {
            Natives.failIntern = true;
            try (RecordingContext ctx = RecordingContext.where(K, "failing").build()) {
                equal(0, Introspection.currentId(), "a failed intern gives id 0");
                check(K.isBound(), "the context is still installed");
            }
            Natives.failIntern = false;
            check(!AgentLink.isLive(), "a failed native call degrades the link");
            long head = ring.getLong(0);
            try (RecordingContext ctx = RecordingContext.where(K, "after").build()) {
                equal(0, Introspection.currentId(), "no interning after degrading");
            }
            equal(interned, Natives.INTERNED.size(), "no intern call after degrading");
            equal(head + 4, ring.getLong(0), "an open ring keeps being written after degrading");
        } finally {
            System.setErr(original);
        }
        String err = captured.toString(StandardCharsets.UTF_8);
        check(err.startsWith("jfrctx: Natives.intern failed") && err.indexOf('\n') == err.length() - 1,
                "exactly one line reports the failure, got: " + err);
    }

    private static void equal(long expected, long actual, String what) {
        check(expected == actual, what + ": expected " + expected + ", got " + actual);
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    /** The main thread's ring now: the first one, or the last it grew to. */
    private static ByteBuffer currentRing() {
        return Natives.GROWN.isEmpty() ? Natives.RINGS.get(0) : Natives.GROWN.get(Natives.GROWN.size() - 1);
    }

    /**
     * While the agent's worker sleeps long (its word set, the ring's attention word carrying the
     * wake hint, as its drains leave them) the next half lap (every 8 transitions on the 16-entry
     * ring) wakes it, and the wake clears the word: one call however many half laps follow until
     * the agent clears the hint; with the word or the hint clear, none.
     */
    private static void halfFullRingWakesTheAgent() {
        ByteBuffer ring = currentRing();
        int before = Natives.WAKES.get();
        Natives.WAKE_WORD.putLong(0, 1); // the word without the hint: not this ring's business
        buildAndClose(16); // 32 transitions: four half laps
        equal(0, Natives.WAKES.get() - before, "no wake without the ring's hint");
        ring.putLong(ThreadLog.GROW, ThreadLog.WAKE_HINT);
        buildAndClose(16);
        equal(1, Natives.WAKES.get() - before, "one wake, at the first half lap");
        equal(0L, Natives.WAKE_WORD.getLong(0), "the wake cleared the word");
        buildAndClose(16);
        equal(1, Natives.WAKES.get() - before, "none once the worker is awake");
        ring.putLong(ThreadLog.GROW, 0);
    }

    private static void buildAndClose(int times) {
        for (int i = 0; i < times; i++) {
            try (RecordingContext c = RecordingContext.where(K, "wake").build()) {
                check(c != null, "built");
            }
        }
    }

    /** The agent asks for a bigger ring in the header: the facade moves at its next lap. */
    private static void ringGrowsWhenAsked() {
        ByteBuffer ring = Natives.RINGS.get(0);
        equal(0, Natives.GROWN.size(), "no growth before asked");
        ring.putLong(48, 64);
        for (int i = 0; i < 20; i++) { // 40 transitions: more than a lap of 16
            try (RecordingContext c = RecordingContext.where(K, "grow").build()) {
                check(c != null, "built");
            }
        }
        equal(1, Natives.GROWN.size(), "the ring grew once");
        ByteBuffer bigger = Natives.GROWN.get(0);
        equal(64, bigger.getLong(24), "capacity of the new ring");
        long head = ring.getLong(0);
        check(bigger.getLong(0) >= 2, "transitions continue on the new ring");
        equal(0, lastContext(bigger), "current on the new ring");
        try (RecordingContext c = RecordingContext.where(K, "grown").build()) {
            check(lastContext(bigger) != 0, "the new ring gets the new context");
        }
        equal(head, ring.getLong(0), "the old ring is not written any more");
        equal(0, lastContext(bigger), "current after the switch");
    }

    /** Builds and closes a never-seen map: its intern call hands over the ids released so far. */
    private static void drainReleased(String value) {
        try (RecordingContext probe = RecordingContext.where(K, "drain-" + value).build()) {
            check(Introspection.currentId() != 0, "probe installed");
        }
    }

    /**
     * A map used only by the scope that built it is released when that scope closes, with no GC;
     * a map used beyond it (found again, snapshotted, installed by another thread) is not.
     */
    private static void privateContextsAreReleasedAtClose() throws InterruptedException {
        long fresh;
        try (RecordingContext c = RecordingContext.where(K, "fresh").build()) {
            fresh = Introspection.currentId();
        }
        drainReleased("1");
        check(Natives.RELEASED_IDS.contains(fresh), "a never-seen map is released when its scope closes");

        long again;
        try (RecordingContext c = RecordingContext.where(K, "fresh").build()) {
            again = Introspection.currentId();
        }
        check(again != fresh, "a released id is never installed again");
        int interned = Natives.INTERNED.size();
        try (RecordingContext c = RecordingContext.where(K, "fresh").build()) {
            equal(again, Introspection.currentId(), "a recurring map is found in the cache");
        }
        equal(interned, Natives.INTERNED.size(), "a recurring map is numbered once more, not per build");
        drainReleased("2");
        check(!Natives.RELEASED_IDS.contains(again), "a recurring map is not released at its close");

        long snapped;
        RecordingContext.Snapshot snapshot;
        try (RecordingContext c = RecordingContext.where(K, "snapped").build()) {
            snapped = Introspection.currentId();
            snapshot = RecordingContext.snapshot();
        }
        drainReleased("3");
        check(!Natives.RELEASED_IDS.contains(snapped), "a snapshot keeps its map");
        try (RecordingContext.Activation a = snapshot.activate()) {
            equal(snapped, Introspection.currentId(), "the snapshot's map is installed again");
        }

        long[] discarded = new long[1];
        RecordingContext.runWithSnapshot(() -> {
            RecordingContext.where(K, "left-open").build();
            discarded[0] = Introspection.currentId();
        }, snapshot);
        drainReleased("4");
        check(Natives.RELEASED_IDS.contains(discarded[0]), "a scope discarded by an outer one releases its map");
        java.lang.ref.Reference.reachabilityFence(snapshot);

        // A map met once is kept by its builder only (not in the shared cache): a builder built on
        // two threads is how another thread finds it while its first build still has it open.
        long[] other = new long[1];
        long mine;
        RecordingContext.Builder both = RecordingContext.where(K, "both");
        try (RecordingContext c = both.build()) {
            mine = Introspection.currentId();
            Thread t = new Thread(() -> {
                try (RecordingContext o = both.build()) {
                    other[0] = Introspection.currentId();
                }
            }, "shares");
            t.start();
            t.join();
        }
        equal(mine, other[0], "another thread reuses a map its builder still has open");
        drainReleased("5");
        check(!Natives.RELEASED_IDS.contains(mine), "a map another thread installed is not released by its builder");

        long[] leftOpen = new long[1];
        Thread t = new Thread(() -> {
            RecordingContext.where(K, "thread-ends-open").build();
            leftOpen[0] = Introspection.currentId();
        }, "ends-open");
        t.start();
        t.join();
        t = null;
        long deadline = System.nanoTime() + 20_000_000_000L;
        for (int i = 0; !Natives.RELEASED_IDS.contains(leftOpen[0]); i++) {
            check(System.nanoTime() < deadline, "the map of a thread that ended with its scope open is"
                    + " released with its ring: " + leftOpen[0] + " not in " + Natives.RELEASED_IDS);
            System.gc();
            Thread.sleep(20);
            drainReleased("6-" + i);
        }
    }

    /** The context of the ring's newest entry: what the thread has installed now. */
    private static long lastContext(ByteBuffer ring) {
        long n = ring.getLong(0) >>> 1;
        long capacity = ring.getLong(24);
        return ring.getLong(64 + 16 * (int) ((n - 1) & (capacity - 1)) + 8);
    }
}
