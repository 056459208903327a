package gt;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import dev.jfrctx.internal.Introspection;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Ground-truth workload for context propagation: submitter threads hand CPU work to executors
 * wrapped by {@code RecordingContext.wrap(..)} / {@code asyncExecutor(..)}, each submission made
 * inside {gt: exec_X}; the task does all its work in a method named after the path, so the method
 * on a sample's stack says which context the agent must report:
 *
 * <pre>
 *   gt_exec_execute            {gt: exec_execute}          wrap(ExecutorService).execute
 *   gt_exec_submit_runnable    {gt: exec_submit_runnable}  .submit(Runnable)
 *   gt_exec_submit_callable    {gt: exec_submit_callable}  .submit(Callable)
 *   gt_exec_invoke_all         {gt: exec_invoke_all}       .invokeAll (2 tasks)
 *   gt_exec_invoke_any         {gt: exec_invoke_any}       .invokeAny (2 tasks)
 *   gt_exec_schedule           {gt: exec_schedule}         wrap(ScheduledExecutorService).schedule
 *   gt_exec_fixed_rate         {gt: exec_fixed_rate}       .scheduleAtFixedRate (4 runs)
 *   gt_exec_fixed_delay        {gt: exec_fixed_delay}      .scheduleWithFixedDelay (4 runs)
 *   gt_exec_cf_supply/apply/accept  {gt: exec_cf}          supplyAsync → thenApplyAsync → thenAcceptAsync
 *   gt_exec_cf_pinned          {gt: exec_cf_pinned}        asyncExecutor chain completed in {gt: foreign}
 *   gt_exec_common             {gt: exec_common}           wrap(ForkJoinPool.commonPool())
 *   gt_exec_wrapped_task       {gt: exec_wrapped_task}     wrap(Runnable) on the unwrapped pool
 *   gt_exec_virtual            {gt: exec_virtual}          wrap(newVirtualThreadPerTaskExecutor()), JDK 21+
 *   gt_worker_idle             {gt: worker_idle}           pool threads' own context, between tasks
 *   gt_none                    {}                          submitted with no context, or unwrapped to the common pool
 * </pre>
 *
 * The pool threads have their own context {gt: worker_idle} installed for their whole life and do
 * a burst of {@code gt_worker_idle} before and after every task (beforeExecute/afterExecute, outside
 * the wrapper), so a worker that did not get its own context back after a task shows up as a wrong
 * sample. Every task also checks its context with {@code Introspection} before working (a mismatch
 * fails the run).
 *
 * <p>With {@code nowrap} (third argument) the same paths use the plain pools and tasks, no
 * {@code RecordingContext.wrap}: the Java agent ({@code -javaagent:jfrctx-agent.jar}) must carry
 * the context by itself. {@code gt_exec_cf_pinned} keeps {@code asyncExecutor}: pinning a chain
 * completed by a foreign thread is a choice no hand-off reveals; its tasks reach the pool already
 * carrying a context, and the pool's {@code beforeExecute} checks that the agent recognised them
 * (did not wrap them again).
 *
 * <p>This class holds the work methods, the pools and the run; {@link PropagationPaths} the
 * submission of each path.
 *
 * <p>Usage: {@code java gt.Propagation [seconds=8] [submitters=2] [wrap|nowrap]}. Compiled with
 * {@code --release 17}; the virtual-thread path is added on JDK 21+ (reflectively). Prints one
 * JSON summary line; exits non-zero on any failure.
 */
public final class Propagation {

    static final RecordingContextKey GT = RecordingContextKey.forName("gt");

    /** The paths, in the order the submitters cycle through them. */
    enum Path {
        EXECUTE, SUBMIT_RUNNABLE, SUBMIT_CALLABLE, INVOKE_ALL, INVOKE_ANY, SCHEDULE, FIXED_RATE,
        FIXED_DELAY, CF, CF_PINNED, COMMON, WRAPPED_TASK, NONE, VIRTUAL;

        /** The value of {@code gt} the submitter installs, null for none. */
        String context() {
            return this == NONE ? null : "exec_" + name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    static final long TIMEOUT_S = 30;
    static volatile long SINK;
    private static final AtomicReference<Throwable> FAILURE = new AtomicReference<>();
    private static final AtomicLongArray RUNS = new AtomicLongArray(Path.values().length);
    private static final AtomicLong IDLE_BURSTS = new AtomicLong();
    private static final AtomicLong CHECKS = new AtomicLong();
    private static final AtomicLong WRAPPED_SEEN = new AtomicLong();

    private Propagation() {
    }

    // ---- the named work methods: computation only, no context calls ------------------------

    static long spin(long until, long seed) {
        long x = seed ^ until;
        long rounds = 0;
        do {
            for (int i = 0; i < 256; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
                x ^= x >>> 29;
            }
            rounds++;
        } while (System.nanoTime() < until);
        return x + rounds;
    }

    // JFR reports inlined frames as methods of their own, so these names stay on the stack even
    // when the JIT inlines them.
    static long gt_exec_execute(long until) { return spin(until, 1); }
    static long gt_exec_submit_runnable(long until) { return spin(until, 2); }
    static long gt_exec_submit_callable(long until) { return spin(until, 3); }
    static long gt_exec_invoke_all(long until) { return spin(until, 4); }
    static long gt_exec_invoke_any(long until) { return spin(until, 5); }
    static long gt_exec_schedule(long until) { return spin(until, 6); }
    static long gt_exec_fixed_rate(long until) { return spin(until, 7); }
    static long gt_exec_fixed_delay(long until) { return spin(until, 8); }
    static long gt_exec_cf_supply(long until) { return spin(until, 9); }
    static long gt_exec_cf_apply(long until) { return spin(until, 10); }
    static long gt_exec_cf_accept(long until) { return spin(until, 11); }
    static long gt_exec_cf_pinned(long until) { return spin(until, 12); }
    static long gt_exec_common(long until) { return spin(until, 13); }
    static long gt_exec_wrapped_task(long until) { return spin(until, 14); }
    static long gt_exec_virtual(long until) { return spin(until, 15); }
    static long gt_worker_idle(long until) { return spin(until, 16); }
    static long gt_none(long until) { return spin(until, 17); }

    // ---- helpers ---------------------------------------------------------------------------

    static void sink(long v) {
        SINK ^= v;
    }

    static long until(long nanos) {
        return System.nanoTime() + nanos;
    }

    /** Checks (outside the gt_* methods) that exactly {gt: value} (or nothing) is installed. */
    static void expect(String value) {
        Map<String, String> want = new TreeMap<>();
        if (value != null) {
            want.put("gt", value);
        }
        Map<String, String> got = Introspection.currentEntries();
        CHECKS.incrementAndGet();
        if (!got.equals(want)) {
            fail(new IllegalStateException("on " + Thread.currentThread().getName() + ": expected "
                    + want + ", installed " + got));
        }
    }

    static void fail(Throwable t) {
        if (FAILURE.compareAndSet(null, t)) {
            System.err.println("Propagation: failure on " + Thread.currentThread() + ":");
            t.printStackTrace();
        }
    }

    static void ran(Path p) {
        RUNS.incrementAndGet(p.ordinal());
    }

    /**
     * A task that carries its own context ({@code RecordingContext.wrap}, {@code asyncExecutor})
     * must reach the pool as it is: the Java agent recognises it and does not wrap it again.
     */
    static void checkRecognised(Runnable r) {
        String type = r.getClass().getName();
        if (type.startsWith("dev.jfrctx.ContextPropagationTasks")) {
            WRAPPED_SEEN.incrementAndGet();
        } else if (type.startsWith("dev.jfrctx.AutoPropagation")
                && r.toString().startsWith("RecordingContext.wrap(")) {
            fail(new IllegalStateException("a wrapped task was wrapped again by the Java agent: " + type));
        }
    }

    /** A burst of the pool thread's own work, in its own context. */
    static void idle() {
        expect("worker_idle");
        sink(gt_worker_idle(until(150_000L)));
        IDLE_BURSTS.incrementAndGet();
    }

    /** Threads that run their whole life inside {gt: worker_idle}. */
    static ThreadFactory ownContextThreads(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(() -> {
                try (RecordingContext own = RecordingContext.where(GT, "worker_idle").build()) {
                    r.run();
                }
            }, prefix + n.getAndIncrement());
            t.setDaemon(true);
            return t;
        };
    }

    /** A fixed pool whose threads have their own context and do their own work around tasks. */
    static final class OwnContextPool extends ThreadPoolExecutor {
        OwnContextPool(String prefix, int threads) {
            super(threads, threads, 0L, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(),
                    ownContextThreads(prefix));
        }

        @Override
        protected void beforeExecute(Thread t, Runnable r) {
            checkRecognised(r);
            idle();
        }

        @Override
        protected void afterExecute(Runnable r, Throwable t) {
            idle();
        }
    }

    /** The same for a scheduled pool. */
    static final class OwnContextScheduler extends ScheduledThreadPoolExecutor {
        OwnContextScheduler(String prefix, int threads) {
            super(threads, ownContextThreads(prefix));
        }

        @Override
        protected void beforeExecute(Thread t, Runnable r) {
            idle();
        }

        @Override
        protected void afterExecute(Runnable r, Throwable t) {
            idle();
        }
    }

    /** {@code Executors.newVirtualThreadPerTaskExecutor()} reflectively, null before JDK 21. */
    static ExecutorService virtualPerTask() {
        if (Runtime.version().feature() < 21) {
            return null;
        }
        try {
            MethodHandle h = MethodHandles.publicLookup().findStatic(
                    java.util.concurrent.Executors.class, "newVirtualThreadPerTaskExecutor",
                    MethodType.methodType(ExecutorService.class));
            return (ExecutorService) h.invoke();
        } catch (Throwable t) {
            throw new IllegalStateException("newVirtualThreadPerTaskExecutor on JDK "
                    + Runtime.version(), t);
        }
    }

    // ---- the paths -------------------------------------------------------------------------

    /**
     * The pools of every path: wrapped with {@code RecordingContext.wrap}, or with {@code nowrap}
     * the plain pools, for the Java agent ({@code -javaagent:jfrctx-agent.jar}) to propagate.
     */
    static final class Pools {
        final boolean wrap;
        final OwnContextPool raw = new OwnContextPool("prop-pool-", 2);
        final ExecutorService pool;
        final OwnContextScheduler rawScheduler = new OwnContextScheduler("prop-sched-", 1);
        final ScheduledExecutorService scheduler;
        final ExecutorService common;
        final ExecutorService rawVirtual = virtualPerTask();
        final ExecutorService virtual;

        Pools(boolean wrap) {
            this.wrap = wrap;
            pool = wrap ? RecordingContext.wrap(raw) : raw;
            scheduler = wrap ? RecordingContext.wrap(rawScheduler) : rawScheduler;
            common = wrap ? RecordingContext.wrap(ForkJoinPool.commonPool()) : ForkJoinPool.commonPool();
            virtual = rawVirtual == null || !wrap ? rawVirtual : RecordingContext.wrap(rawVirtual);
        }

        /** {@code RecordingContext.wrap(task)}, or the task itself with {@code nowrap}. */
        Runnable task(Runnable task) {
            return wrap ? RecordingContext.wrap(task) : task;
        }
    }

    static void submitter(int index, long deadline, Pools p) {
        SplittableRandom rnd = new SplittableRandom(0x9E0900L + index);
        Path[] paths = Path.values();
        int i = index * 5;
        while (System.nanoTime() < deadline && FAILURE.get() == null) {
            Path path = paths[i++ % paths.length];
            // 0.5–3 ms of work per task or stage (split between the tasks of invokeAll and the
            // runs of a periodic task), so that every work method gets a similar share.
            long d = 500_000L + rnd.nextLong(2_500_000L);
            try {
                PropagationPaths.submit(path, d, p);
                expect(null); // the submitter's own context is back to none
            } catch (Throwable t) {
                fail(new IllegalStateException("path " + path, t));
            }
        }
    }

    /**
     * On JDK 19+ ({@code ExecutorService} is {@code AutoCloseable}): closing a wrapped pool closes
     * the pool itself, and closing the wrapped common pool returns at once, as it does on the
     * common pool (a wrapper relying on the interface's default {@code close()} would wait for a
     * common pool that never terminates). Returns the number of checks made.
     */
    static int checkClose(Pools p) throws Exception {
        if (!(p.common instanceof AutoCloseable)) {
            return 0;
        }
        ExecutorService raw = java.util.concurrent.Executors.newFixedThreadPool(1);
        ExecutorService wrapped = RecordingContext.wrap(raw);
        wrapped.submit(() -> { });
        Thread closer = new Thread(() -> {
            try {
                ((AutoCloseable) p.common).close();
                ((AutoCloseable) wrapped).close();
            } catch (Throwable t) {
                fail(t);
            }
        }, "prop-close");
        closer.start();
        closer.join(TimeUnit.SECONDS.toMillis(TIMEOUT_S));
        if (closer.isAlive()) {
            fail(new IllegalStateException("close() of a wrapped executor did not return"));
            closer.interrupt();
        } else if (!raw.isTerminated() || ForkJoinPool.commonPool().isShutdown()) {
            fail(new IllegalStateException("close(): pool terminated " + raw.isTerminated()
                    + ", common pool shut down " + ForkJoinPool.commonPool().isShutdown()));
        }
        return 2;
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 8.0;
        int submitters = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        boolean wrap = !(args.length > 2 && args[2].equals("nowrap"));
        Pools p = new Pools(wrap);
        p.raw.prestartAllCoreThreads();
        p.rawScheduler.prestartAllCoreThreads();

        long start = System.nanoTime();
        long deadline = start + (long) (seconds * 1e9);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < submitters; i++) {
            int index = i;
            threads.add(new Thread(() -> submitter(index, deadline, p), "prop-submitter-" + i));
        }
        for (Thread t : threads) {
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        int closeChecks = wrap ? checkClose(p) : 0;
        p.pool.shutdown();
        p.scheduler.shutdown();
        if (p.virtual != null) {
            p.virtual.shutdown();
        }
        if (!p.pool.awaitTermination(TIMEOUT_S, TimeUnit.SECONDS)
                || !p.scheduler.awaitTermination(TIMEOUT_S, TimeUnit.SECONDS)
                || (p.virtual != null && !p.virtual.awaitTermination(TIMEOUT_S, TimeUnit.SECONDS))) {
            fail(new IllegalStateException("pools did not terminate"));
        }
        long elapsedMs = (System.nanoTime() - start) / 1_000_000L;
        if (FAILURE.get() != null) {
            System.exit(1);
        }
        StringBuilder runs = new StringBuilder();
        for (Path path : Path.values()) {
            if (runs.length() > 0) {
                runs.append(',');
            }
            runs.append('"').append(path.name().toLowerCase(java.util.Locale.ROOT)).append("\":")
                    .append(RUNS.get(path.ordinal()));
        }
        System.out.println("{\"workload\":\"Propagation\",\"java\":\"" + System.getProperty("java.version")
                + "\",\"virtual\":" + (p.virtual != null)
                + ",\"submitters\":" + submitters + ",\"wrap\":" + wrap + ",\"elapsed_ms\":" + elapsedMs
                + ",\"checks\":" + CHECKS.get() + ",\"close_checks\":" + closeChecks + ",\"idle_bursts\":" + IDLE_BURSTS.get()
                + ",\"wrapped_seen\":" + WRAPPED_SEEN.get()
                + ",\"runs\":{" + runs + "},\"sink\":" + SINK + "}");
    }
}
