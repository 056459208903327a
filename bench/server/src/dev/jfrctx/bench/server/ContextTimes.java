package dev.jfrctx.bench.server;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * With {@code -Dbench.timeContexts=true}: how long the filter's context takes on the request
 * thread, timed there with {@code System.nanoTime()} (its opening plus its closing, each between
 * two clock reads), in a histogram of 10 ns buckets up to 20 µs. With Tomcat's virtual threads
 * every request runs on a fresh thread, so this is a fresh thread's first context under the
 * server's real load, next to whatever else the request does to the caches. The same filter in a
 * JVM without the agent (the facade is then a no-op) gives the clock reads' own share. The
 * harness ({@code run.py --time-contexts}) reads the cumulative counts from {@code /admin/stats}
 * at both ends of its window and takes percentiles of the difference.
 */
final class ContextTimes {
    private ContextTimes() {}

    static final boolean ENABLED = Boolean.getBoolean("bench.timeContexts");

    private static final int BUCKET_NS = 10;
    /** The last bucket counts everything from 20 µs on. */
    private static final AtomicLongArray BUCKETS = new AtomicLongArray(2001);
    /** The openings alone. */
    private static final AtomicLongArray OPENINGS = new AtomicLongArray(2001);

    static void record(long openNs, long closeNs) {
        add(BUCKETS, openNs + closeNs);
        add(OPENINGS, openNs);
    }

    private static void add(AtomicLongArray buckets, long ns) {
        buckets.incrementAndGet((int) Math.min(buckets.length() - 1, Math.max(0, ns) / BUCKET_NS));
    }

    /** Opening + closing: the non-empty buckets as a JSON array of {@code [lower bound, count]}. */
    static String json() {
        return json(BUCKETS);
    }

    /** The openings alone, as {@link #json()}. */
    static String openings() {
        return json(OPENINGS);
    }

    private static String json(AtomicLongArray buckets) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < buckets.length(); i++) {
            long n = buckets.get(i);
            if (n != 0) {
                sb.append(sb.length() == 1 ? "" : ",")
                        .append('[').append(i * BUCKET_NS).append(',').append(n).append(']');
            }
        }
        return sb.append(']').toString();
    }
}
