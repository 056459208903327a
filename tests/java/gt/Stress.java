package gt;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Stress workloads for scripts/stress.sh (not a unit test):
 *
 * <pre>
 *   java gt.Stress switch THREADS SECONDS   THREADS threads switch contexts as fast as they can:
 *                                           build (one of 16 values) → activate a snapshot →
 *                                           close both, with a little work inside
 *   java gt.Stress platform N [PARALLEL]    N platform threads, at most PARALLEL (64) alive at
 *                                           once, each installs a context, works ~50 µs, ends
 *   java gt.Stress virtual N                N virtual threads (JDK 21+), all submitted at once to
 *                                           a thread-per-task executor, each like the above
 * </pre>
 *
 * Prints one JSON line: {@code {"workload":"Stress","mode":...,"threads":N,"switches":N,
 * "elapsed_ms":N}}; exits non-zero on any failure. Compiled with {@code --release 17}.
 */
public final class Stress {

    static final RecordingContextKey KEY = RecordingContextKey.forName("stress");
    static final RecordingContextKey TASK = RecordingContextKey.forName("task");
    static final String[] VALUES = new String[16];

    static {
        for (int i = 0; i < VALUES.length; i++) {
            VALUES[i] = "v" + i;
        }
    }

    static volatile long sink;

    private Stress() {
    }

    static long stress_work(long rounds) {
        long x = rounds;
        for (long i = 0; i < rounds; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    static void print(String mode, long threads, long switches, long startNanos) {
        long ms = (System.nanoTime() - startNanos) / 1_000_000;
        System.out.println("{\"workload\":\"Stress\",\"mode\":\"" + mode + "\",\"threads\":" + threads
                + ",\"switches\":" + switches + ",\"elapsed_ms\":" + ms + "}");
    }

    static void switching(int threads, double seconds) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong switches = new AtomicLong();
        List<Thread> list = new ArrayList<>();
        long start = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            final int me = t;
            Thread th = new Thread(() -> {
                RecordingContext.Snapshot snap;
                try (RecordingContext c = RecordingContext.where(TASK, "t" + me).build()) {
                    snap = RecordingContext.snapshot();
                }
                long n = 0;
                long x = 0;
                while (!stop.get()) {
                    try (RecordingContext c = RecordingContext.where(KEY, VALUES[(int) (n & 15)]).build()) {
                        x += stress_work(16);
                        try (RecordingContext.Activation a = snap.activate()) {
                            x += stress_work(16);
                        }
                    }
                    n++;
                }
                sink = x;
                switches.addAndGet(4 * n);
            }, "stress-switch-" + t);
            list.add(th);
            th.start();
        }
        Thread.sleep((long) (seconds * 1000));
        stop.set(true);
        for (Thread th : list) {
            th.join();
        }
        print("switch", threads, switches.get(), start);
    }

    static Runnable task(long i, AtomicLong switches) {
        return () -> {
            try (RecordingContext c = RecordingContext.where(KEY, VALUES[(int) (i & 15)]).build()) {
                sink = stress_work(5_000);
            }
            switches.addAndGet(2);
        };
    }

    static void platform(int n, int parallel) throws Exception {
        AtomicLong switches = new AtomicLong();
        long start = System.nanoTime();
        Thread[] alive = new Thread[parallel];
        for (int i = 0; i < n; i++) {
            int slot = i % parallel;
            if (alive[slot] != null) {
                alive[slot].join();
            }
            alive[slot] = new Thread(task(i, switches), "stress-platform-" + i);
            alive[slot].start();
        }
        for (Thread t : alive) {
            if (t != null) {
                t.join();
            }
        }
        if (switches.get() != 2L * n) {
            throw new IllegalStateException("only " + switches.get() / 2 + " of " + n + " threads ran");
        }
        print("platform", n, switches.get(), start);
    }

    static void virtual(int n) throws Exception {
        Method factory;
        try {
            factory = java.util.concurrent.Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        } catch (NoSuchMethodException e) {
            throw new IllegalStateException("virtual threads need JDK 21+", e);
        }
        AtomicLong switches = new AtomicLong();
        long start = System.nanoTime();
        ExecutorService pool = (ExecutorService) factory.invoke(null);
        for (int i = 0; i < n; i++) {
            pool.execute(task(i, switches));
        }
        pool.shutdown();
        if (!pool.awaitTermination(10, TimeUnit.MINUTES)) {
            throw new IllegalStateException("virtual threads did not finish");
        }
        if (switches.get() != 2L * n) {
            throw new IllegalStateException("only " + switches.get() / 2 + " of " + n + " tasks ran");
        }
        print("virtual", n, switches.get(), start);
    }

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "switch";
        switch (mode) {
            case "switch":
                switching(args.length > 1 ? Integer.parseInt(args[1]) : 8,
                        args.length > 2 ? Double.parseDouble(args[2]) : 60);
                break;
            case "platform":
                platform(args.length > 1 ? Integer.parseInt(args[1]) : 100_000,
                        args.length > 2 ? Integer.parseInt(args[2]) : 64);
                break;
            case "virtual":
                virtual(args.length > 1 ? Integer.parseInt(args[1]) : 100_000);
                break;
            default:
                throw new IllegalArgumentException("unknown mode " + mode);
        }
    }
}
