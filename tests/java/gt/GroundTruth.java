package gt;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Ground-truth workload for the join: every stretch of CPU work runs in a method whose name says
 * which context must be installed while it runs.
 *
 * <pre>
 *   gt_alpha   {gt: alpha}           gt_beta    {gt: beta}
 *   gt_outer   {gt: outer}           gt_inner   {gt: inner, layer: 2}   (nested inside outer)
 *   gt_pooled  {gt: pooled}          (on a pool thread, through a snapshot)
 *   gt_none    {}                    (on workers and on pool threads)
 * </pre>
 *
 * The {@code gt_*} methods only compute: contexts are built and closed by their callers, so a
 * sample whose stack holds {@code gt_X} was taken strictly between the two transitions around it.
 * Phases last 0.1–5 ms, so many samples fall near a transition.
 *
 * <p>Usage: {@code java gt.GroundTruth [seconds=8] [platform|virtual] [workers=3] [divisor=1]}:
 * phase lengths are divided by {@code divisor} (e.g. 200: 0.5–25 µs phases, ≈ 100 k transitions/s
 * per worker, to load the rings; the summary reports the rate). Compiled with
 * {@code --release 17}; virtual threads (JDK 21+) are created reflectively. Prints one JSON line
 * summarising the work done; exits non-zero on any failure.
 */
public final class GroundTruth {

    static final RecordingContextKey GT = RecordingContextKey.forName("gt");
    static final RecordingContextKey LAYER = RecordingContextKey.forName("layer");

    static final int POOL_THREADS = 2;

    /** Results of the work methods end up here so that the JIT cannot drop the work. */
    static volatile long SINK;

    private static final AtomicReference<Throwable> FAILURE = new AtomicReference<>();

    // Phase counters (work done), reported in the summary.
    private static final AtomicLong ALPHA = new AtomicLong();
    private static final AtomicLong BETA = new AtomicLong();
    private static final AtomicLong NONE = new AtomicLong();
    private static final AtomicLong NESTED = new AtomicLong();
    private static final AtomicLong POOLED_RUN = new AtomicLong();
    private static final AtomicLong POOLED_CALL = new AtomicLong();
    private static final AtomicLong POOLED_ACTIVATE = new AtomicLong();
    private static final AtomicLong POOL_NONE = new AtomicLong();
    private static final AtomicLong WORK_NANOS = new AtomicLong();
    /** Context transitions made by the worker threads (pool threads not counted). */
    private static final AtomicLong WORKER_TRANSITIONS = new AtomicLong();

    /** Phase lengths are divided by this (argument 4). */
    static long divisor = 1;
    /** Yield between phases: always for virtual threads; for platform threads not when bursting. */
    static boolean yieldBetweenPhases = true;

    private GroundTruth() {
    }

    // ---- the named work methods: computation only, no context calls ------------------------

    static long gt_alpha(long until) {
        long x = 0x9E3779B97F4A7C15L ^ until;
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

    static long gt_beta(long until) {
        long x = 0xD1B54A32D192ED03L ^ until;
        long rounds = 0;
        do {
            for (int i = 0; i < 256; i++) {
                x ^= x << 13;
                x ^= x >>> 7;
                x ^= x << 17;
            }
            rounds++;
        } while (System.nanoTime() < until);
        return x ^ rounds;
    }

    static long gt_none(long until) {
        long a = until | 1;
        long b = 0x632BE59BD9B4E019L;
        long rounds = 0;
        do {
            for (int i = 0; i < 256; i++) {
                a += b;
                b = Long.rotateLeft(b ^ a, 23) * 0x9FB21C651E98DF25L;
            }
            rounds++;
        } while (System.nanoTime() < until);
        return a ^ b ^ rounds;
    }

    static long gt_outer(long until) {
        long x = until;
        long rounds = 0;
        do {
            for (int i = 0; i < 256; i++) {
                x = Long.reverse(x) * 0xBF58476D1CE4E5B9L + i;
            }
            rounds++;
        } while (System.nanoTime() < until);
        return x + rounds;
    }

    static long gt_inner(long until) {
        long x = until ^ 0x94D049BB133111EBL;
        long rounds = 0;
        do {
            for (int i = 0; i < 256; i++) {
                x = (x ^ (x >>> 31)) * 0x94D049BB133111EBL;
                x += Long.bitCount(x);
            }
            rounds++;
        } while (System.nanoTime() < until);
        return x - rounds;
    }

    static long gt_pooled(long until) {
        double acc = 1.0 + (until & 0xff);
        long rounds = 0;
        do {
            for (int i = 1; i <= 128; i++) {
                acc = acc * 1.000000119 + 1.0 / i;
                if (acc > 1e12) {
                    acc = Math.sqrt(acc);
                }
            }
            rounds++;
        } while (System.nanoTime() < until);
        return Double.doubleToRawLongBits(acc) ^ rounds;
    }

    // ---- phases (contexts are built/closed here, outside the named methods) ----------------

    static void sink(long v) {
        SINK ^= v;
    }

    /** 75 % of phases last 1–5 ms, the rest 0.1–1 ms. */
    static long phaseNanos(SplittableRandom rnd) {
        if (rnd.nextInt(4) == 0) {
            return (100_000L + rnd.nextLong(900_000L)) / divisor;
        }
        return (1_000_000L + rnd.nextLong(4_000_000L)) / divisor;
    }

    static void alpha(SplittableRandom rnd) {
        long d = phaseNanos(rnd);
        try (RecordingContext ctx = RecordingContext.where(GT, "alpha").build()) {
            sink(gt_alpha(System.nanoTime() + d));
        }
        ALPHA.incrementAndGet();
        WORK_NANOS.addAndGet(d);
    }

    static void beta(SplittableRandom rnd) {
        long d = phaseNanos(rnd);
        try (RecordingContext ctx = RecordingContext.where(GT, "beta").build()) {
            sink(gt_beta(System.nanoTime() + d));
        }
        BETA.incrementAndGet();
        WORK_NANOS.addAndGet(d);
    }

    static void none(SplittableRandom rnd) {
        long d = phaseNanos(rnd);
        sink(gt_none(System.nanoTime() + d));
        NONE.incrementAndGet();
        WORK_NANOS.addAndGet(d);
    }

    static void nested(SplittableRandom rnd) {
        long d1 = phaseNanos(rnd) / 2;
        long d2 = phaseNanos(rnd);
        long d3 = phaseNanos(rnd) / 2;
        try (RecordingContext outer = RecordingContext.where(GT, "outer").build()) {
            sink(gt_outer(System.nanoTime() + d1));
            try (RecordingContext inner =
                    RecordingContext.where(GT, "inner").where(LAYER, "2").build()) {
                sink(gt_inner(System.nanoTime() + d2));
            }
            sink(gt_outer(System.nanoTime() + d3));
        }
        NESTED.incrementAndGet();
        WORK_NANOS.addAndGet(d1 + d2 + d3);
    }

    /**
     * Takes a snapshot inside {gt: pooled} and hands it to the pool, through one of the three
     * ways of installing a snapshot; sometimes hands over a plain task that runs gt_none (the pool
     * thread must then have no context). Returns false when the pool is saturated.
     */
    static boolean pooled(SplittableRandom rnd, ThreadPoolExecutor pool, Semaphore permits) {
        if (!permits.tryAcquire()) {
            return false;
        }
        long d = phaseNanos(rnd);
        int variant = rnd.nextInt(4);
        RecordingContext.Snapshot snapshot;
        try (RecordingContext ctx = RecordingContext.where(GT, "pooled").build()) {
            snapshot = RecordingContext.snapshot();
        }
        try {
            pool.execute(() -> {
                try {
                    long until = System.nanoTime() + d;
                    switch (variant) {
                        case 0:
                            RecordingContext.runWithSnapshot(() -> sink(gt_pooled(until)), snapshot);
                            POOLED_RUN.incrementAndGet();
                            break;
                        case 1:
                            long r;
                            try {
                                r = RecordingContext.callWithSnapshot(() -> gt_pooled(until), snapshot);
                            } catch (RuntimeException e) {
                                throw e;
                            } catch (Exception e) {
                                throw new IllegalStateException(e);
                            }
                            sink(r);
                            POOLED_CALL.incrementAndGet();
                            break;
                        case 2:
                            try (var activation = snapshot.activate()) {
                                sink(gt_pooled(until));
                            }
                            POOLED_ACTIVATE.incrementAndGet();
                            break;
                        default:
                            sink(gt_none(until));
                            POOL_NONE.incrementAndGet();
                            break;
                    }
                    WORK_NANOS.addAndGet(d);
                } catch (Throwable t) {
                    fail(t);
                } finally {
                    permits.release();
                }
            });
        } catch (RuntimeException e) {
            permits.release();
            throw e;
        }
        return true;
    }

    static void worker(int index, long deadline, ThreadPoolExecutor pool, Semaphore permits) {
        SplittableRandom rnd = new SplittableRandom(0x5EED0000L + index);
        int last = -1;
        long transitions = 0;
        while (System.nanoTime() < deadline && FAILURE.get() == null) {
            // Never the same kind twice in a row: a sample joined to the neighbouring phase
            // then always shows up as a wrong context.
            int kind = last < 0 ? rnd.nextInt(5) : rnd.nextInt(4);
            if (last >= 0 && kind >= last) {
                kind++;
            }
            last = kind;
            switch (kind) {
                case 0:
                    alpha(rnd);
                    transitions += 2;
                    break;
                case 1:
                    beta(rnd);
                    transitions += 2;
                    break;
                case 2:
                    none(rnd);
                    break;
                case 3:
                    nested(rnd);
                    transitions += 4;
                    break;
                default:
                    if (pooled(rnd, pool, permits)) {
                        transitions += 2;
                    } else {
                        none(rnd);
                    }
                    break;
            }
            // Lets other virtual threads onto the carriers (harmless for platform threads, but
            // on a busy machine it gives the core away, which a burst run must not do).
            if (yieldBetweenPhases) {
                Thread.yield();
            }
        }
        WORKER_TRANSITIONS.addAndGet(transitions);
    }

    static void fail(Throwable t) {
        if (FAILURE.compareAndSet(null, t)) {
            System.err.println("GroundTruth: failure on " + Thread.currentThread() + ":");
            t.printStackTrace();
        }
    }

    // ---- threads ---------------------------------------------------------------------------

    static ThreadFactory platformFactory(String prefix) {
        AtomicLong n = new AtomicLong();
        return r -> {
            Thread t = new Thread(r, prefix + n.getAndIncrement());
            t.setDaemon(false);
            return t;
        };
    }

    /** {@code Thread.ofVirtual().name(prefix, 0).factory()}, reflectively (compiled for 17). */
    public static ThreadFactory virtualFactory(String prefix) {
        try {
            Class<?> builder = Class.forName("java.lang.Thread$Builder");
            Class<?> ofVirtual = Class.forName("java.lang.Thread$Builder$OfVirtual");
            MethodHandles.Lookup lookup = MethodHandles.publicLookup();
            MethodHandle of = lookup.findStatic(Thread.class, "ofVirtual", MethodType.methodType(ofVirtual));
            MethodHandle name = lookup.findVirtual(ofVirtual, "name",
                    MethodType.methodType(ofVirtual, String.class, long.class));
            MethodHandle factory = lookup.findVirtual(builder, "factory",
                    MethodType.methodType(ThreadFactory.class));
            Object b = of.invoke();
            b = name.invoke(b, prefix, 0L);
            return (ThreadFactory) factory.invoke(b);
        } catch (Throwable t) {
            throw new UnsupportedOperationException(
                    "virtual threads need JDK 21+ (running " + System.getProperty("java.version") + ")", t);
        }
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 8.0;
        String mode = args.length > 1 ? args[1] : "platform";
        int workers = args.length > 2 ? Integer.parseInt(args[2]) : 3;
        divisor = args.length > 3 ? Math.max(1, Long.parseLong(args[3])) : 1;
        if (!mode.equals("platform") && !mode.equals("virtual")) {
            System.err.println("GroundTruth: mode must be 'platform' or 'virtual', not '" + mode + "'");
            System.exit(2);
        }
        boolean virtual = mode.equals("virtual");
        yieldBetweenPhases = virtual || divisor == 1;
        ThreadFactory workerFactory;
        ThreadFactory poolFactory;
        try {
            workerFactory = virtual ? virtualFactory("gt-vworker-") : platformFactory("gt-worker-");
            poolFactory = virtual ? virtualFactory("gt-vpool-") : platformFactory("gt-pool-");
        } catch (UnsupportedOperationException e) {
            System.err.println("GroundTruth: " + e.getMessage());
            System.exit(2);
            return;
        }

        ThreadPoolExecutor pool = new ThreadPoolExecutor(POOL_THREADS, POOL_THREADS, 0L,
                TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), poolFactory);
        pool.prestartAllCoreThreads();
        Semaphore permits = new Semaphore(2 * POOL_THREADS);

        long start = System.nanoTime();
        long deadline = start + (long) (seconds * 1e9);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < workers; i++) {
            int index = i;
            Thread t = workerFactory.newThread(() -> {
                try {
                    worker(index, deadline, pool, permits);
                } catch (Throwable e) {
                    fail(e);
                }
            });
            threads.add(t);
        }
        for (Thread t : threads) {
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        pool.shutdown();
        if (!pool.awaitTermination(30, TimeUnit.SECONDS)) {
            fail(new IllegalStateException("pool did not drain within 30 s"));
        }
        long elapsedMs = (System.nanoTime() - start) / 1_000_000L;

        if (FAILURE.get() != null) {
            System.exit(1);
        }
        System.out.println("{\"workload\":\"GroundTruth\",\"mode\":\"" + mode + "\""
                + ",\"java\":\"" + System.getProperty("java.version") + "\""
                + ",\"workers\":" + workers + ",\"pool_threads\":" + POOL_THREADS
                + ",\"elapsed_ms\":" + elapsedMs + ",\"divisor\":" + divisor
                + ",\"worker_transitions_per_s\":"
                + WORKER_TRANSITIONS.get() * 1000L / Math.max(1L, elapsedMs) / workers
                + ",\"work_ms\":" + WORK_NANOS.get() / 1_000_000L
                + ",\"phases\":{\"alpha\":" + ALPHA.get() + ",\"beta\":" + BETA.get()
                + ",\"none\":" + NONE.get() + ",\"nested\":" + NESTED.get()
                + ",\"pooled_run\":" + POOLED_RUN.get() + ",\"pooled_call\":" + POOLED_CALL.get()
                + ",\"pooled_activate\":" + POOLED_ACTIVATE.get()
                + ",\"pool_none\":" + POOL_NONE.get() + "}"
                + ",\"sink\":" + SINK + "}");
    }
}
