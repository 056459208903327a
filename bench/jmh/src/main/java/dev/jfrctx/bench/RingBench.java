package dev.jfrctx.bench;

import dev.jfrctx.internal.ThreadLog;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The ring writer alone ({@code ThreadLog.transition}), on a ring this benchmark allocates itself
 * (laid out as the agent does: ARCHITECTURE.md "Thread ring"). No agent, no facade bookkeeping:
 * the part of a context switch that is the ring protocol.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
public class RingBench {

    private static final int CAPACITY = 1024;
    private static final VarHandle LONGS =
            MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());

    private ThreadLog log;
    private ByteBuffer copy;
    private long n;

    @Setup
    public void setup() {
        ByteBuffer ring = ByteBuffer.allocateDirect(64 + 16 * CAPACITY).order(ByteOrder.nativeOrder());
        ring.putLong(24, CAPACITY); // capacity
        ring.putLong(32, Thread.currentThread().getId()); // thread id
        ring.putLong(40, 1); // handle
        log = new ThreadLog(ring);
        copy = ByteBuffer.allocateDirect(64 + 16 * CAPACITY).order(ByteOrder.nativeOrder());
    }

    /** Two transitions (install, then back to no context), as one activate/close pair writes. */
    @Benchmark
    public long transitionPair() {
        log.transition(42);
        log.transition(0);
        return log.transitions();
    }

    /**
     * The same stores and fence as {@code ThreadLog.transition} (a copy of its protocol), without
     * the {@code System.nanoTime()} read: what the ring costs beyond the clock.
     */
    @Benchmark
    public long protocolWithoutClockPair() {
        write(42);
        write(0);
        return n;
    }

    private void write(long id) {
        long k = n;
        int entry = 64 + 16 * (int) (k & (CAPACITY - 1));
        LONGS.setRelease(copy, 0, 2 * k + 1);
        VarHandle.storeStoreFence();
        LONGS.set(copy, entry, k);
        LONGS.set(copy, entry + 8, id);
        LONGS.setRelease(copy, 0, 2 * k + 2);
        LONGS.setRelease(copy, 16, id);
        n = k + 1;
    }
}
