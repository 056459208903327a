package dev.jfrctx.bench;

import dev.jfrctx.internal.ThreadLog;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
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
    private LongBuffer words;
    private ByteBuffer copyVh;
    private long n;
    private long m;

    @Setup
    public void setup() {
        ByteBuffer ring = ByteBuffer.allocateDirect(64 + 16 * CAPACITY).order(ByteOrder.nativeOrder());
        ring.putLong(24, CAPACITY); // capacity
        ring.putLong(32, Thread.currentThread().getId()); // thread id
        ring.putLong(40, 1); // handle
        log = new ThreadLog(ring);
        words = ByteBuffer.allocateDirect(64 + 16 * CAPACITY).order(ByteOrder.nativeOrder()).asLongBuffer();
        copyVh = ByteBuffer.allocateDirect(64 + 16 * CAPACITY).order(ByteOrder.nativeOrder());
    }

    /** Two transitions (install, then back to no context), as one activate/close pair writes. */
    @Benchmark
    public long transitionPair() {
        log.transition(42);
        log.transition(0);
        return log.transitions();
    }

    /**
     * The same stores and fences as {@code ThreadLog.transition} (a copy of its protocol: plain
     * stores through a {@code LongBuffer} view, explicit fences), without the
     * {@code System.nanoTime()} read: what the ring costs beyond the clock.
     */
    @Benchmark
    public long protocolWithoutClockPair() {
        write(42);
        write(0);
        return n;
    }

    private void write(long id) {
        LongBuffer w = words;
        long k = n;
        int entry = 8 + 2 * ((int) k & (CAPACITY - 1));
        VarHandle.releaseFence();
        w.put(0, 2 * k + 1);
        VarHandle.storeStoreFence();
        w.put(entry, k);
        w.put(entry + 1, id);
        VarHandle.releaseFence();
        w.put(0, 2 * k + 2);
        VarHandle.releaseFence();
        w.put(2, id);
        n = k + 1;
    }

    /**
     * The previous writer's access path, for comparison: the same protocol through a
     * {@code byteBufferViewVarHandle} ({@code setRelease}/{@code set}), without the clock. On JDK
     * 17 its cost depends on whether C2 inlines {@code writeVarHandle} into the caller, which
     * varies from fork to fork (see {@code ThreadLog}).
     */
    @Benchmark
    public long protocolVarHandleWithoutClockPair() {
        writeVarHandle(42);
        writeVarHandle(0);
        return m;
    }

    private void writeVarHandle(long id) {
        long k = m;
        int entry = 64 + 16 * (int) (k & (CAPACITY - 1));
        LONGS.setRelease(copyVh, 0, 2 * k + 1);
        VarHandle.storeStoreFence();
        LONGS.set(copyVh, entry, k);
        LONGS.set(copyVh, entry + 8, id);
        LONGS.setRelease(copyVh, 0, 2 * k + 2);
        LONGS.setRelease(copyVh, 16, id);
        m = k + 1;
    }
}
