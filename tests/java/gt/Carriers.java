package gt;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * Ground truth for samples taken on the carriers of virtual threads: {@code threads} virtual
 * threads {@code c-0} … {@code c-(N-1)} (400 by default) loop for {@code seconds}; thread
 * {@code c-i} repeatedly installs {gt: vc, n: i} and, inside it, runs {@code gt_vc}, which
 * computes, allocates, yields, parks ({@code LockSupport.parkNanos}) and sleeps inside
 * {@code synchronized} (pinned on JDK 21), so that many samples fall into mount, unmount and
 * pinned transitions; between two such phases it runs {@code gt_none} without a context.
 *
 * <p>A sample whose stack holds {@code gt_vc} must carry {gt: vc, n: i} of its thread, or be
 * unknown; {@code {}} there is the carrier's context given to the virtual thread's work. The
 * {@code gt_*} methods must stay out of line ({@code -XX:CompileCommand=dontinline,gt.Carriers::gt_*}):
 * when C2 inlines several of them into one compiled body, JFR can put a sample into the wrong
 * one of them.
 *
 * <p>Usage: {@code java gt.Carriers [seconds=6] [threads=400]}. Prints one JSON summary line.
 */
public final class Carriers {

    static final RecordingContextKey GT = RecordingContextKey.forName("gt");
    static final RecordingContextKey N = RecordingContextKey.forName("n");

    static volatile long SINK;
    static volatile Object KEEP;

    private static final AtomicReference<Throwable> FAILURE = new AtomicReference<>();
    private static final AtomicLong PHASES = new AtomicLong();
    private static final AtomicLong YIELDS = new AtomicLong();
    private static final AtomicLong PARKS = new AtomicLong();
    private static final AtomicLong PINNED_SLEEPS = new AtomicLong();
    private static final AtomicLong ALLOCATIONS = new AtomicLong();

    private Carriers() {
    }

    static long spin(long nanos) {
        long until = System.nanoTime() + nanos;
        long x = until | 1;
        do {
            for (int i = 0; i < 64; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
                x ^= x >>> 29;
            }
        } while (System.nanoTime() < until);
        return x;
    }

    /** The work done inside {gt: vc, n: i}. */
    static long gt_vc(SplittableRandom rnd, Object lock) throws InterruptedException {
        long x = spin(20_000 + rnd.nextLong(60_000));
        switch (rnd.nextInt(4)) {
            case 0:
                Thread.yield();
                YIELDS.incrementAndGet();
                break;
            case 1:
                LockSupport.parkNanos(20_000 + rnd.nextLong(200_000));
                PARKS.incrementAndGet();
                break;
            case 2:
                synchronized (lock) {
                    Thread.sleep(0, 100_000 + rnd.nextInt(200_000));
                }
                PINNED_SLEEPS.incrementAndGet();
                break;
            default:
                Object[] keep = new Object[16];
                for (int i = 0; i < keep.length; i++) {
                    keep[i] = new byte[256 + rnd.nextInt(8192)];
                }
                KEEP = keep;
                ALLOCATIONS.incrementAndGet();
                break;
        }
        return x ^ spin(10_000 + rnd.nextLong(30_000));
    }

    /** The work done without a context. */
    static long gt_none(SplittableRandom rnd) {
        long x = spin(10_000 + rnd.nextLong(40_000));
        Thread.yield();
        return x;
    }

    static void worker(int index, long deadline) throws InterruptedException {
        SplittableRandom rnd = new SplittableRandom(0xCA221E2L + index);
        Object lock = new Object();
        String n = Integer.toString(index);
        long x = 0;
        while (System.nanoTime() < deadline && FAILURE.get() == null) {
            try (RecordingContext ctx = RecordingContext.where(GT, "vc").where(N, n).build()) {
                x ^= gt_vc(rnd, lock);
            }
            PHASES.incrementAndGet();
            x ^= gt_none(rnd);
        }
        SINK ^= x;
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 6.0;
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : 400;
        ThreadFactory factory;
        try {
            factory = GroundTruth.virtualFactory("c-");
        } catch (UnsupportedOperationException e) {
            System.err.println("Carriers: " + e.getMessage());
            System.exit(2);
            return;
        }
        long start = System.nanoTime();
        long deadline = start + (long) (seconds * 1e9);
        List<Thread> all = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            int index = i;
            all.add(factory.newThread(() -> {
                try {
                    worker(index, deadline);
                } catch (Throwable t) {
                    if (FAILURE.compareAndSet(null, t)) {
                        t.printStackTrace();
                    }
                }
            }));
        }
        for (Thread t : all) {
            t.start();
        }
        for (Thread t : all) {
            t.join();
        }
        if (FAILURE.get() != null) {
            System.exit(1);
        }
        System.out.println("{\"workload\":\"Carriers\",\"java\":\"" + System.getProperty("java.version") + "\""
                + ",\"threads\":" + threads + ",\"elapsed_ms\":" + (System.nanoTime() - start) / 1_000_000L
                + ",\"phases\":" + PHASES.get() + ",\"yields\":" + YIELDS.get() + ",\"parks\":" + PARKS.get()
                + ",\"pinned_sleeps\":" + PINNED_SLEEPS.get() + ",\"allocations\":" + ALLOCATIONS.get()
                + ",\"sink\":" + SINK + "}");
    }
}
