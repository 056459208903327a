package dev.jfrctx.bench;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The first context on a fresh thread, as in a thread-per-request server: start a thread, let it
 * install one context and close it, join it (64 threads started, then joined, per invocation:
 * joining each at once would measure waking the benchmark thread). {@link #freshThreadFirstContext} minus
 * {@link #freshThreadNothing} (the same thread doing nothing) is what the first use costs: the
 * facade's per-thread state, the thread's ring (with the agent) and the two transitions. Virtual
 * threads on JDK 21 and later (a start and join cost a few microseconds, so the difference is
 * resolved); platform threads on JDK 17, where the tens of microseconds of a thread start drown
 * it. Measured as wall time of the starting thread: the work runs on the new thread, which the
 * CPU-time profiler does not see.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
public class FreshThreadBench {

    static final RecordingContextKey ENDPOINT = RecordingContextKey.forName("endpoint");

    /** {@code Thread.startVirtualThread(Runnable)} (JDK 21+), null before. */
    private static final MethodHandle START_VIRTUAL = startVirtual();

    private RecordingContext.Snapshot snapshot;
    private Runnable firstContext;
    private final Runnable nothing = () -> { };

    private static MethodHandle startVirtual() {
        try {
            return MethodHandles.publicLookup().findStatic(Thread.class, "startVirtualThread",
                    MethodType.methodType(Thread.class, Runnable.class));
        } catch (ReflectiveOperationException absent) {
            return null;
        }
    }

    @Setup
    public void setup() {
        try (RecordingContext ctx = RecordingContext.where(ENDPOINT, "/orders").build()) {
            snapshot = RecordingContext.snapshot();
        }
        RecordingContext.Snapshot s = snapshot;
        firstContext = () -> {
            try (RecordingContext.Activation a = s.activate()) {
                // nothing: the first use itself is measured
            }
        };
    }

    /** Threads started per operation before joining them (results are per thread). */
    static final int BATCH = 64;

    private final Thread[] batch = new Thread[BATCH];

    private void runOnFreshThreads(Runnable r) throws Throwable {
        Thread[] ts = batch;
        for (int i = 0; i < BATCH; i++) {
            Thread t;
            if (START_VIRTUAL != null) {
                t = (Thread) START_VIRTUAL.invokeExact(r);
            } else {
                t = new Thread(r);
                t.start();
            }
            ts[i] = t;
        }
        for (Thread t : ts) {
            t.join();
        }
    }

    /** A fresh thread that does nothing: the baseline. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void freshThreadNothing() throws Throwable {
        runOnFreshThreads(nothing);
    }

    /** A fresh thread that activates a snapshot and closes it: its first context. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void freshThreadFirstContext() throws Throwable {
        runOnFreshThreads(firstContext);
    }
}
