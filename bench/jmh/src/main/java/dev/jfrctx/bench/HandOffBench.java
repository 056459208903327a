package dev.jfrctx.bench;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import java.util.concurrent.Callable;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * One hand-off through the JDK's own code, on one thread, so that the Java agent's cost is not
 * buried under a thread wake-up: run by {@link Main} in the group {@code handoff} (native agent
 * only) and {@code handoff-javaagent} (native agent and {@code -javaagent:jfrctx-agent.jar}); the
 * difference between the two is the cost per hand-off. {@code context}: whether the submitting
 * thread has a context installed ({@code none}: the agent must cost next to nothing).
 *
 * <ul>
 *   <li>{@code tpeSubmit}: {@code ThreadPoolExecutor.submit(Callable)} to a shut-down pool whose
 *       rejection handler runs the task in the caller: {@code newTaskFor} (a {@code FutureTask}),
 *       {@code execute} (the agent stores the snapshot in the task), the task's {@code run} (the
 *       agent activates and restores it). The same JDK code as a pool worker runs, minus the
 *       queue and the wake-up.</li>
 *   <li>{@code tpeExecute}: {@code execute(Runnable)} of a lambda the same way (with a context the
 *       agent wraps it).</li>
 *   <li>{@code forkJoin}: inside a {@code ForkJoinPool} worker, {@code fork()} then
 *       {@code join()} of a task, which the worker takes back from its own queue and runs: the
 *       agent captures at the push and activates around {@code doExec}.</li>
 * </ul>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
public class HandOffBench {

    static final RecordingContextKey ENDPOINT = RecordingContextKey.forName("endpoint");
    static final int FORKS = 1000;

    @Param({"none", "context"})
    public String context;

    private ThreadPoolExecutor rejecting;
    private ForkJoinPool pool;
    private RecordingContext installed;
    private final Callable<Long> callable = () -> 1L;
    private final Runnable runnable = () -> { };
    private long sink;

    @Setup(Level.Trial)
    public void setup() {
        rejecting = new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
                (r, executor) -> r.run());
        rejecting.shutdown();
        pool = new ForkJoinPool(1);
    }

    /**
     * Per iteration, not per trial: JMH runs each iteration as a task of its own thread pool,
     * submitted by a thread with no context, so with the Java agent every iteration starts with
     * none, and a context left open from one iteration to the next is not the innermost one when
     * it is closed.
     */
    @Setup(Level.Iteration)
    public void install() {
        if (context.equals("context")) {
            installed = RecordingContext.where(ENDPOINT, "/orders").build();
        }
    }

    @TearDown(Level.Iteration)
    public void uninstall() {
        if (installed != null) {
            installed.close();
            installed = null;
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        pool.shutdownNow();
    }

    @Benchmark
    public Future<Long> tpeSubmit() {
        return rejecting.submit(callable);
    }

    @Benchmark
    public void tpeExecute() {
        rejecting.execute(runnable);
    }

    @Benchmark
    @OperationsPerInvocation(FORKS)
    public long forkJoin() throws Exception {
        boolean withContext = installed != null;
        return pool.submit(() -> {
            long n = 0;
            if (withContext) {
                try (RecordingContext c = RecordingContext.where(ENDPOINT, "/fork").build()) {
                    n = forks();
                }
            } else {
                n = forks();
            }
            return n;
        }).get();
    }

    private long forks() {
        long n = 0;
        for (int i = 0; i < FORKS; i++) {
            ForkJoinTask<?> t = ForkJoinTask.adapt(runnable).fork();
            t.join();
            n++;
        }
        sink += n;
        return n;
    }
}
