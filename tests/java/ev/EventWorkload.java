package ev;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * Workloads for the non-CPU events: every event of interest is produced inside a method whose
 * name says which context is installed around it: {@code ev_X} runs in {@code {ev: X}},
 * {@code ev_none} in no context. Contexts are built and closed only by the callers of these
 * methods.
 *
 * <p>Usage: {@code java ev.EventWorkload MODE SECONDS} with MODE one of {@code alloc} (objects
 * allocated in {@code ev_alloc_a}, {@code ev_alloc_b}, {@code ev_none}), {@code lock} (threads
 * blocked on a contended monitor in {@code ev_lock_a}, {@code ev_lock_b} while
 * {@code ev_holder} holds it; {@code Object.wait} in {@code ev_wait}), {@code park}
 * ({@code LockSupport.parkNanos} of 15–25 ms in {@code ev_park_a}, {@code ev_park_b}),
 * {@code cpu} (spinning in {@code ev_cpu_a}, {@code ev_cpu_b}, {@code ev_none}), {@code mix}
 * (alloc, lock and park together, one allocating and one parking thread). Prints one JSON
 * summary line with the process CPU time.
 */
public final class EventWorkload {
    static final RecordingContextKey EV = RecordingContextKey.forName("ev");
    static final Object LOCK = new Object();
    static final Object WAIT = new Object();
    static volatile Object SINK;
    static volatile long SUM;
    static volatile boolean stop;

    private EventWorkload() {}

    // ---- alloc -------------------------------------------------------------------------------

    static Object ev_alloc_a(int n) {
        Object last = null;
        for (int i = 0; i < n; i++) {
            last = new long[64 + (i & 63)];
        }
        return last;
    }

    static Object ev_alloc_b(int n) {
        Object last = null;
        for (int i = 0; i < n; i++) {
            last = new byte[2048 + (i & 255)];
        }
        return last;
    }

    static Object ev_none(int n) {
        Object last = null;
        for (int i = 0; i < n; i++) {
            last = new int[128];
        }
        return last;
    }

    static void alloc(long until, int k) {
        while (System.nanoTime() < until && !stop) {
            try (RecordingContext c = RecordingContext.where(EV, "alloc_a").build()) {
                SINK = ev_alloc_a(2000);
            }
            SINK = ev_none(1000);
            try (RecordingContext c = RecordingContext.where(EV, "alloc_b").build()) {
                SINK = ev_alloc_b(1000);
            }
        }
    }

    // ---- lock --------------------------------------------------------------------------------

    static void ev_holder(long holdNanos) {
        synchronized (LOCK) {
            long end = System.nanoTime() + holdNanos;
            while (System.nanoTime() < end) {
                LockSupport.parkNanos(1_000_000);
            }
        }
    }

    static void ev_lock_a() {
        synchronized (LOCK) {
            SUM++;
        }
    }

    static void ev_lock_b() {
        synchronized (LOCK) {
            SUM++;
        }
    }

    static void ev_wait() throws InterruptedException {
        synchronized (WAIT) {
            WAIT.wait(15);
        }
    }

    static void holder(long until) {
        while (System.nanoTime() < until && !stop) {
            try (RecordingContext c = RecordingContext.where(EV, "holder").build()) {
                ev_holder(25_000_000L);
            }
            LockSupport.parkNanos(2_000_000L);
        }
    }

    static void waiter(long until, boolean a) throws InterruptedException {
        while (System.nanoTime() < until && !stop) {
            try (RecordingContext c = RecordingContext.where(EV, a ? "lock_a" : "lock_b").build()) {
                if (a) {
                    ev_lock_a();
                } else {
                    ev_lock_b();
                }
            }
            try (RecordingContext c = RecordingContext.where(EV, "wait").build()) {
                ev_wait();
            }
        }
    }

    // ---- park --------------------------------------------------------------------------------

    static void ev_park_a() {
        LockSupport.parkNanos(15_000_000L);
    }

    static void ev_park_b() {
        LockSupport.parkNanos(25_000_000L);
    }

    static void park(long until) {
        while (System.nanoTime() < until && !stop) {
            try (RecordingContext c = RecordingContext.where(EV, "park_a").build()) {
                ev_park_a();
            }
            try (RecordingContext c = RecordingContext.where(EV, "park_b").build()) {
                ev_park_b();
            }
        }
    }

    // ---- cpu ---------------------------------------------------------------------------------

    static long spin(long nanos, long seed) {
        long end = System.nanoTime() + nanos;
        long x = seed;
        do {
            for (int i = 0; i < 256; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
                x ^= x >>> 29;
            }
        } while (System.nanoTime() < end);
        return x;
    }

    static long ev_cpu_a(long nanos) {
        return spin(nanos, 1);
    }

    static long ev_cpu_b(long nanos) {
        return spin(nanos, 2);
    }

    static long ev_cpu_none(long nanos) {
        return spin(nanos, 3);
    }

    static void cpu(long until) {
        while (System.nanoTime() < until && !stop) {
            try (RecordingContext c = RecordingContext.where(EV, "cpu_a").build()) {
                SUM += ev_cpu_a(3_000_000L);
            }
            SUM += ev_cpu_none(1_000_000L);
            try (RecordingContext c = RecordingContext.where(EV, "cpu_b").build()) {
                SUM += ev_cpu_b(2_000_000L);
            }
        }
    }

    // ---- main --------------------------------------------------------------------------------

    interface Body {
        void run() throws Exception;
    }

    static Thread start(String name, Body body) {
        Thread t = new Thread(() -> {
            try {
                body.run();
            } catch (Throwable e) {
                e.printStackTrace();
                System.exit(3);
            }
        }, name);
        t.start();
        return t;
    }

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "cpu";
        double seconds = args.length > 1 ? Double.parseDouble(args[1]) : 5;
        long t0 = System.nanoTime();
        long until = t0 + (long) (seconds * 1e9);
        List<Thread> threads = new ArrayList<>();
        switch (mode) {
            case "alloc":
                for (int i = 0; i < 2; i++) {
                    final int k = i;
                    threads.add(start("alloc-" + i, () -> alloc(until, k)));
                }
                break;
            case "lock":
                threads.add(start("holder", () -> holder(until)));
                threads.add(start("waiter-a", () -> waiter(until, true)));
                threads.add(start("waiter-b", () -> waiter(until, false)));
                break;
            case "park":
                threads.add(start("park-0", () -> park(until)));
                threads.add(start("park-1", () -> park(until)));
                break;
            case "cpu":
                threads.add(start("cpu-0", () -> cpu(until)));
                break;
            case "mix":
                threads.add(start("alloc-0", () -> alloc(until, 0)));
                threads.add(start("holder", () -> holder(until)));
                threads.add(start("waiter-a", () -> waiter(until, true)));
                threads.add(start("waiter-b", () -> waiter(until, false)));
                threads.add(start("park-0", () -> park(until)));
                break;
            default:
                System.err.println("unknown mode " + mode);
                System.exit(2);
        }
        for (Thread t : threads) {
            t.join();
        }
        long cpu = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
        System.out.println("{\"mode\":\"" + mode + "\",\"wall_ns\":" + (System.nanoTime() - t0)
                + ",\"process_cpu_ns\":" + cpu + "}");
    }
}
