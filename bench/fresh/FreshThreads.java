import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Fresh threads at a steady rate, as a thread-per-request server starts them: each either
 * activates a snapshot once and closes it ({@code context}), builds a never-seen context
 * {@code {endpoint, request=<counter>}} and closes it ({@code new}, what a server filter that
 * labels each request does), or does nothing ({@code nothing}).
 * {@code run.py} reads the CPU time of each thread group from /proc when it is done.
 *
 * <p>Usage: {@code java FreshThreads SECONDS context|new|nothing THREADS_PER_SECOND [virtual|platform]}
 * (virtual threads by default). With {@code -Dwarmup=S}, first runs S seconds the same way and
 * prints {@code warm}, then waits {@code -Dhold=MS} (so that the CPU can be read) before the
 * measured SECONDS. Prints
 * {@code threads N wall-ns P50 P90} at the end (threads started in the measured seconds, and the
 * median and 90th percentile of the wall time each spent in its task, read with
 * {@code System.nanoTime()} on the thread itself), then waits for {@code -Dhold=MS} again.
 * Compiled with {@code --release 17}: virtual threads (JDK 21+) are started through a handle.
 */
public final class FreshThreads {
    /** {@code Thread.startVirtualThread}, null before JDK 21. */
    private static final MethodHandle START_VIRTUAL = startVirtual();

    private static MethodHandle startVirtual() {
        try {
            return MethodHandles.publicLookup().findStatic(Thread.class, "startVirtualThread",
                    MethodType.methodType(Thread.class, Runnable.class));
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    /** Wall ns of each task in the measured seconds, by start order (the last ones overwrite). */
    private static final long[] WALL = new long[1 << 20];
    private static final AtomicInteger TIMED = new AtomicInteger();
    private static final RecordingContextKey ENDPOINT = RecordingContextKey.forName("endpoint");
    private static final RecordingContextKey REQUEST = RecordingContextKey.forName("request");
    /** The `new` mode's request counter: every map is new. */
    private static final AtomicLong REQUESTS = new AtomicLong();

    private FreshThreads() {
    }

    public static void main(String[] args) throws Throwable {
        long seconds = Long.parseLong(args[0]);
        String mode = args[1];
        long rate = Long.parseLong(args[2]);
        boolean platform = args.length > 3 && args[3].equals("platform");
        if (!platform && START_VIRTUAL == null) {
            throw new IllegalStateException("virtual threads need JDK 21 or later");
        }
        RecordingContext.Snapshot snapshot;
        try (RecordingContext c = RecordingContext.where(ENDPOINT, "/x").build()) {
            snapshot = RecordingContext.snapshot();
        }
        // Both modes read the clock twice, so that `context` minus `nothing` leaves the clock out;
        // both allocate first, so that a platform thread's first TLAB is not in the figure.
        Runnable task = switch (mode) {
            case "context" -> () -> {
                allocate();
                long t0 = System.nanoTime();
                try (RecordingContext.Activation a = snapshot.activate()) {
                    // the first context of a fresh thread
                }
                record(System.nanoTime() - t0);
            };
            case "new" -> () -> {
                allocate();
                String request = Long.toString(REQUESTS.incrementAndGet());
                long t0 = System.nanoTime();
                try (RecordingContext c =
                        RecordingContext.where(ENDPOINT, "/x").where(REQUEST, request).build()) {
                    // a never-seen map, the first context of a fresh thread
                }
                record(System.nanoTime() - t0);
            };
            case "nothing" -> () -> {
                allocate();
                long t0 = System.nanoTime();
                record(System.nanoTime() - t0);
            };
            default -> throw new IllegalArgumentException("mode: context, new or nothing, not " + mode);
        };
        long warmup = Long.getLong("warmup", 0);
        if (warmup > 0) {
            run(task, warmup, rate, platform);
            System.out.println("warm");
            System.out.flush();
            Thread.sleep(Long.getLong("hold", 3000));
        }
        TIMED.set(0);
        long n = run(task, seconds, rate, platform);
        long[] wall = Arrays.copyOf(WALL, Math.min(TIMED.get(), WALL.length));
        Arrays.sort(wall);
        System.out.println("threads " + n + " wall-ns " + wall[wall.length / 2] + " " + wall[wall.length * 9 / 10]);
        System.out.flush();
        Thread.sleep(Long.getLong("hold", 3000));
    }

    /** Objects allocated by the tasks, kept so that the allocation is not removed. */
    private static final Object[] KEPT = new Object[1024];

    /** The thread's first allocation: a fresh platform thread takes its first TLAB here. */
    private static void allocate() {
        @SuppressWarnings("deprecation") // Thread.threadId() is JDK 19+
        int slot = (int) (Thread.currentThread().getId() & (KEPT.length - 1));
        KEPT[slot] = new byte[24];
    }

    private static void record(long ns) {
        WALL[TIMED.getAndIncrement() & (WALL.length - 1)] = ns;
    }

    /** Starts {@code rate} threads a second running {@code task} for {@code seconds}: how many. */
    private static long run(Runnable task, long seconds, long rate, boolean platform) throws Throwable {
        Thread[] batch = new Thread[64];
        long start = System.nanoTime();
        long end = start + seconds * 1_000_000_000L;
        long n = 0;
        while (System.nanoTime() < end) {
            long wait = start + n * 1_000_000_000L / rate - System.nanoTime();
            if (wait > 0) {
                Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
            }
            for (int i = 0; i < batch.length; i++) {
                if (platform) {
                    batch[i] = new Thread(task);
                    batch[i].start();
                } else {
                    batch[i] = (Thread) START_VIRTUAL.invokeExact(task);
                }
            }
            for (Thread t : batch) {
                t.join();
            }
            n += batch.length;
        }
        return n;
    }
}
