package gt;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Many concurrent virtual threads, each with its own context: thread {@code v-i} builds
 * {gt: v, n: i mod 100}, works in {@code gt_vwork}, then parks on a latch until all of them are
 * alive with their context installed (the peak), works in {@code gt_vwork} again and ends.
 *
 * <p>The workload reports its own memory from {@code /proc/self/status}: {@code VmRSS} before the
 * first thread starts (baseline), at the peak (all threads parked inside their context), at the end
 * (all threads ended, after a GC), optionally again after lingering {@code linger_ms} more (so
 * that the agent's transition history of the ended threads can expire), and {@code VmHWM} (the
 * process' peak RSS) at the end.
 *
 * <p>Thread {@code v-i} also records {@code System.nanoTime()} right before and right after it
 * builds its context and right before and right after it closes it (its two transitions lie inside
 * those windows): with a fourth argument the workload writes them to that file, one line
 * {@code i built_before built_after closed_before closed_after} per thread, so that a test can
 * tell which context the thread had at any instant.
 *
 * <p>Usage: {@code java gt.VirtualScale [threads=100000] [work_us=20] [linger_ms=0] [times_file]}. JDK 21+ (virtual threads
 * are created reflectively: compiled with {@code --release 17}). Prints one JSON summary line; exits
 * non-zero on any failure.
 */
public final class VirtualScale {

    static final RecordingContextKey GT = RecordingContextKey.forName("gt");
    static final RecordingContextKey N = RecordingContextKey.forName("n");
    static final int CONTEXTS = 100;
    static final long TIMEOUT_S = 120;

    static volatile long SINK;
    private static final AtomicReference<Throwable> FAILURE = new AtomicReference<>();
    private static final AtomicLong WORK_NANOS = new AtomicLong();

    private VirtualScale() {
    }

    /** The only place CPU work happens: every sample in it must carry {gt: v, n: ...}. */
    static long gt_vwork(long until) {
        long x = until;
        long rounds = 0;
        do {
            for (int i = 0; i < 64; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
                x ^= x >>> 29;
            }
            rounds++;
        } while (System.nanoTime() < until);
        return x + rounds;
    }

    /** {@code Thread.ofVirtual().name("v-", 0).factory()}, reflectively. */
    static ThreadFactory virtualFactory() {
        try {
            Class<?> builder = Class.forName("java.lang.Thread$Builder");
            Class<?> ofVirtual = Class.forName("java.lang.Thread$Builder$OfVirtual");
            MethodHandles.Lookup lookup = MethodHandles.publicLookup();
            MethodHandle of = lookup.findStatic(Thread.class, "ofVirtual", MethodType.methodType(ofVirtual));
            MethodHandle name = lookup.findVirtual(ofVirtual, "name",
                    MethodType.methodType(ofVirtual, String.class, long.class));
            MethodHandle factory = lookup.findVirtual(builder, "factory",
                    MethodType.methodType(ThreadFactory.class));
            return (ThreadFactory) factory.invoke(name.invoke(of.invoke(), "v-", 0L));
        } catch (Throwable t) {
            throw new UnsupportedOperationException(
                    "virtual threads need JDK 21+ (running " + System.getProperty("java.version") + ")", t);
        }
    }

    /** A field of /proc/self/status in kB ({@code VmRSS}, {@code VmHWM}), -1 when unreadable. */
    static long statusKb(String field) {
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/self/status"), StandardCharsets.US_ASCII)) {
                if (line.startsWith(field + ":")) {
                    String v = line.substring(field.length() + 1).trim();
                    return Long.parseLong(v.substring(0, v.indexOf(' ')));
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }

    static void fail(Throwable t) {
        if (FAILURE.compareAndSet(null, t)) {
            System.err.println("VirtualScale: failure on " + Thread.currentThread() + ":");
            t.printStackTrace();
        }
    }

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        long workNanos = (args.length > 1 ? Long.parseLong(args[1]) : 20L) * 1_000L;
        long lingerMs = args.length > 2 ? Long.parseLong(args[2]) : 0L;
        String timesFile = args.length > 3 ? args[3] : null;
        // [4i] before build, [4i+1] after build, [4i+2] before close, [4i+3] after close.
        long[] times = new long[4 * threads];
        ThreadFactory factory;
        try {
            factory = virtualFactory();
        } catch (UnsupportedOperationException e) {
            System.err.println("VirtualScale: " + e.getMessage());
            System.exit(2);
            return;
        }
        // Values "0".."99", built once so that the threads share them (their maps are still
        // built per thread, by the threads).
        String[] values = new String[CONTEXTS];
        for (int i = 0; i < CONTEXTS; i++) {
            values[i] = Integer.toString(i);
        }

        CountDownLatch alive = new CountDownLatch(threads);
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch ended = new CountDownLatch(threads);
        System.gc();
        long rssBaseline = statusKb("VmRSS");
        long start = System.nanoTime();
        List<Thread> all = new ArrayList<>(threads);
        for (int i = 0; i < threads; i++) {
            String n = values[i % CONTEXTS];
            int index = i;
            Thread t = factory.newThread(() -> {
                try {
                    times[4 * index] = System.nanoTime();
                    RecordingContext ctx = RecordingContext.where(GT, "v").where(N, n).build();
                    times[4 * index + 1] = System.nanoTime();
                    try {
                        SINK ^= gt_vwork(System.nanoTime() + workNanos);
                        alive.countDown();
                        if (!release.await(TIMEOUT_S, TimeUnit.SECONDS)) {
                            throw new IllegalStateException("not released within " + TIMEOUT_S + " s");
                        }
                        SINK ^= gt_vwork(System.nanoTime() + workNanos);
                    } finally {
                        times[4 * index + 2] = System.nanoTime();
                        ctx.close();
                        times[4 * index + 3] = System.nanoTime();
                    }
                    WORK_NANOS.addAndGet(2 * workNanos);
                } catch (Throwable e) {
                    fail(e);
                } finally {
                    ended.countDown();
                }
            });
            all.add(t);
            t.start();
        }
        if (!alive.await(TIMEOUT_S, TimeUnit.SECONDS)) {
            fail(new IllegalStateException(alive.getCount() + " threads not alive within " + TIMEOUT_S + " s"));
        }
        long aliveMs = (System.nanoTime() - start) / 1_000_000L;
        int liveAtPeak = 0;
        for (Thread t : all) {
            if (t.isAlive()) {
                liveAtPeak++;
            }
        }
        long rssPeak = statusKb("VmRSS");
        release.countDown();
        if (!ended.await(TIMEOUT_S, TimeUnit.SECONDS)) {
            fail(new IllegalStateException(ended.getCount() + " threads not ended within " + TIMEOUT_S + " s"));
        }
        for (Thread t : all) {
            t.join();
        }
        long elapsedMs = (System.nanoTime() - start) / 1_000_000L;
        all.clear();
        long rssEnded = statusKb("VmRSS");
        // Let the facade hand unreachable rings and contexts back to the agent, then measure again.
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(200);
        }
        long rssEnd = statusKb("VmRSS");
        long rssLinger = -1;
        if (lingerMs > 0) {
            Thread.sleep(lingerMs);
            System.gc();
            Thread.sleep(200);
            rssLinger = statusKb("VmRSS");
        }
        long hwm = statusKb("VmHWM");

        if (timesFile != null) {
            StringBuilder sb = new StringBuilder(threads * 64);
            for (int i = 0; i < threads; i++) {
                sb.append(i);
                for (int k = 0; k < 4; k++) {
                    sb.append(' ').append(times[4 * i + k]);
                }
                sb.append('\n');
            }
            Files.write(Paths.get(timesFile), sb.toString().getBytes(StandardCharsets.US_ASCII));
        }
        if (FAILURE.get() != null) {
            System.exit(1);
        }
        System.out.println("{\"workload\":\"VirtualScale\",\"java\":\"" + System.getProperty("java.version")
                + "\",\"threads\":" + threads + ",\"live_at_peak\":" + liveAtPeak
                + ",\"work_us\":" + workNanos / 1_000L
                + ",\"alive_ms\":" + aliveMs + ",\"elapsed_ms\":" + elapsedMs
                + ",\"work_ms\":" + WORK_NANOS.get() / 1_000_000L
                + ",\"rss_kb\":{\"baseline\":" + rssBaseline + ",\"peak\":" + rssPeak
                + ",\"ended\":" + rssEnded + ",\"end\":" + rssEnd + ",\"linger_ms\":" + lingerMs + ",\"after_linger\":" + rssLinger
                + ",\"hwm\":" + hwm + "}"
                + ",\"sink\":" + SINK + "}");
    }
}
