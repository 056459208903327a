package dev.jfrctx;

import java.lang.management.ManagementFactory;

/**
 * Measures what a context switch allocates on the calling thread once the JIT has compiled it
 * ({@code com.sun.management.ThreadMXBean.getThreadAllocatedBytes}). Shared by the JUnit test
 * (no agent) and {@code AgentModeMain} (live ring).
 */
public final class SwitchAllocation {

    private static final int ROUND = 100_000;
    private static final int MAX_ROUNDS = 60;

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private SwitchAllocation() {
    }

    /**
     * Repeats rounds of {@value #ROUND} {@code activate()} + {@code close()} pairs until one
     * round allocates (almost) nothing, at most {@value #MAX_ROUNDS} rounds.
     *
     * @param snapshot the snapshot to activate
     * @return bytes per pair in the last round
     */
    public static double activateClose(RecordingContext.Snapshot snapshot) {
        double perOp = Double.NaN;
        for (int r = 0; r < MAX_ROUNDS; r++) {
            long before = THREADS.getThreadAllocatedBytes(Thread.currentThread().getId());
            activateCloseRound(snapshot);
            long after = THREADS.getThreadAllocatedBytes(Thread.currentThread().getId());
            perOp = (double) (after - before) / ROUND;
            if (perOp < 0.01) {
                break;
            }
        }
        return perOp;
    }

    private static void activateCloseRound(RecordingContext.Snapshot snapshot) {
        for (int i = 0; i < ROUND; i++) {
            try (RecordingContext.Activation a = snapshot.activate()) {
                // the switch itself
            }
        }
    }

    /**
     * As {@link #activateClose}, for {@code build()} + {@code close()} of one builder whose map
     * is built again and again.
     *
     * @param builder the builder
     * @return bytes per pair in the last round
     */
    public static double buildClose(RecordingContext.Builder builder) {
        double perOp = Double.NaN;
        for (int r = 0; r < MAX_ROUNDS; r++) {
            long before = THREADS.getThreadAllocatedBytes(Thread.currentThread().getId());
            buildCloseRound(builder);
            long after = THREADS.getThreadAllocatedBytes(Thread.currentThread().getId());
            perOp = (double) (after - before) / ROUND;
            if (perOp < 0.01) {
                break;
            }
        }
        return perOp;
    }

    private static void buildCloseRound(RecordingContext.Builder builder) {
        for (int i = 0; i < ROUND; i++) {
            try (RecordingContext c = builder.build()) {
                // the switch itself
            }
        }
    }
}
