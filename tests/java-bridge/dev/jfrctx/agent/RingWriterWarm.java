package dev.jfrctx.agent;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The ring writer's warm-up ({@link RingWriter#warm}, run by {@code StreamBridge.start} at
 * VMInit) and the writer at the end of a stack, without the agent (tests/it/definition_log.rs,
 * {@code ring_writer_*}). Needs {@code --add-exports java.base/jdk.internal.misc=ALL-UNNAMED}, as
 * the agent's export gives the bridge, and {@code RingWriter} kept out of the JIT (the test's
 * {@code -XX:CompileCommand=exclude}), so that the overflows land inside the writer's calls.
 *
 * <p>After {@code warm()}, 16 fresh threads with small stacks descend to the end of their stack
 * again and again and write transitions to a scratch ring there, one per level, until a
 * {@link StackOverflowError} (some stop a transition half-written: {@code head} odd); each then
 * writes one transition at a shallow depth. Checked: every thread's last transition is on its
 * ring intact ({@code head} even, the entry's id), and the ring's count of transitions only grew.
 * Prints {@code ring writer: warm ok, N overflows, M inside the writer, H half-written}; exits 1
 * on a failed check.
 */
public final class RingWriterWarm {
    private static final int ENTRIES = 64;

    private final long ring;
    private final long mask = 7;
    private int reached;
    private int overflows;
    private int inside;
    private int halfWritten;
    private long id = 1;

    private RingWriterWarm(long ring) {
        this.ring = ring;
    }

    private long plain(int depth, int limit) throws Throwable {
        reached = depth;
        if (depth >= limit) {
            return write(0);
        }
        return plain(depth + 1, limit) + 1;
    }

    private long write(int level) throws Throwable {
        long n = RingWriter.transition(ring, mask, ++id);
        return write(level + 1) + n;
    }

    private void descend(int limit) throws Throwable {
        try {
            plain(0, limit);
        } catch (StackOverflowError e) {
            overflows++;
            StackTraceElement[] t = e.getStackTrace();
            if (t.length > 0 && !t[0].getClassName().equals(RingWriterWarm.class.getName())) {
                inside++;
            }
            if ((RingWriter.get(ring) & 1) == 1) {
                halfWritten++; // the head odd: stopped inside a transition
            }
        }
    }

    private void run() {
        try {
            descend(Integer.MAX_VALUE);
            int end = reached;
            for (int j = 1; j <= 64; j++) {
                descend(Math.max(0, end - j));
            }
            long before = RingWriter.get(ring) >>> 1;
            long n = RingWriter.transition(ring, mask, 424242);
            long head = RingWriter.get(ring);
            long entryId = RingWriter.get(ring + ENTRIES + ((n & mask) << 4) + 8);
            if (n < before || head != 2 * n + 2 || entryId != 424242) {
                throw new IllegalStateException("ring after the overflows: before " + before + ", n " + n
                        + ", head " + head + ", id " + entryId);
            }
        } catch (Throwable t) {
            failure = t;
        }
    }

    private Throwable failure;

    public static void main(String[] args) throws Throwable {
        RingWriter.warm();
        int overflows = 0;
        int inside = 0;
        int halfWritten = 0;
        for (int i = 0; i < 16; i++) {
            ByteBuffer memory = ByteBuffer.allocateDirect(ENTRIES + 8 * 16).order(ByteOrder.nativeOrder());
            RingWriterWarm w = new RingWriterWarm(RingWriter.address(memory));
            Thread t = new Thread(null, w::run, "deep-" + i, 256 * 1024);
            t.start();
            t.join();
            java.lang.ref.Reference.reachabilityFence(memory);
            if (w.failure != null) {
                w.failure.printStackTrace();
                System.exit(1);
            }
            overflows += w.overflows;
            inside += w.inside;
            halfWritten += w.halfWritten;
        }
        System.out.println("ring writer: warm ok, " + overflows + " overflows, " + inside + " inside the writer, "
                + halfWritten + " half-written");
    }
}
