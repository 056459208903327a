package nt;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicLong;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;
import jdk.jfr.consumer.RecordingStream;

/**
 * Thread-per-task virtual threads, as a thread-per-request server runs them: for
 * {@code seconds}, at most 8 at a time, each task is a new virtual thread {@code r-i} that
 * builds {nt: r, n: i}, runs {@code nt_work} (CPU, then allocation, then CPU; ~0.6 ms) inside
 * it, closes it and ends. Short-lived threads are those whose JFR thread constant is written
 * lazily: most get sampled in the epoch they first mount.
 *
 * <p>Usage: {@code java nt.ShortLived SECONDS agent} (run with the agent; prints one JSON line)
 * or {@code java nt.ShortLived SECONDS probe FILE} (no agent: a plain {@code RecordingStream}
 * and, beside it, a {@code Recording} written to FILE, both with the same sample events; prints
 * one JSON line with, per event type, the samples and those without a thread in the stream and
 * in the file read back after the run).
 */
public final class ShortLived {

    static final RecordingContextKey NT = RecordingContextKey.forName("nt");
    static final RecordingContextKey N = RecordingContextKey.forName("n");
    static final String[] SAMPLES = {"jdk.ExecutionSample", "jdk.ObjectAllocationSample", "jdk.CPUTimeSample"};

    static volatile long SINK;
    static volatile Object KEEP;

    private ShortLived() {
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

    /** Runs only inside {nt: r, n: i}. */
    static long nt_work() {
        long x = spin(300_000);
        Object[] keep = new Object[32];
        for (int j = 0; j < keep.length; j++) {
            keep[j] = new byte[1024 + j * 64];
        }
        KEEP = keep;
        return x ^ spin(300_000);
    }

    static long task(int i) {
        try (RecordingContext ctx = RecordingContext.where(NT, "r").where(N, Integer.toString(i)).build()) {
            return nt_work();
        }
    }

    /** Runs the tasks for {@code seconds}; returns how many ran. */
    static long run(double seconds) throws InterruptedException {
        ThreadFactory factory = gt.GroundTruth.virtualFactory("r-");
        Semaphore running = new Semaphore(8);
        AtomicLong done = new AtomicLong();
        long deadline = System.nanoTime() + (long) (seconds * 1e9);
        int i = 0;
        while (System.nanoTime() < deadline) {
            running.acquire();
            int index = i++;
            factory.newThread(() -> {
                try {
                    SINK ^= task(index);
                    done.incrementAndGet();
                } finally {
                    running.release();
                }
            }).start();
        }
        running.acquire(8);
        return done.get();
    }

    private static final class Counts {
        long samples;
        long noThread;
    }

    static void count(Map<String, Counts> counts, RecordedEvent e) {
        String type = e.getEventType().getName();
        Counts c = counts.get(type);
        if (c == null) {
            return;
        }
        String field = e.getEventType().getField("sampledThread") != null ? "sampledThread" : "eventThread";
        RecordedThread t = e.getValue(field);
        synchronized (c) {
            c.samples++;
            if (t == null) {
                c.noThread++;
            }
        }
    }

    static Map<String, Counts> table() {
        Map<String, Counts> m = new TreeMap<>();
        for (String s : SAMPLES) {
            if (!s.equals("jdk.CPUTimeSample") || Runtime.version().feature() >= 25) {
                m.put(s, new Counts());
            }
        }
        return m;
    }

    static void enable(Map<String, Counts> m, java.util.function.Function<String, jdk.jfr.EventSettings> enable) {
        for (String s : m.keySet()) {
            jdk.jfr.EventSettings es = enable.apply(s);
            if (s.equals("jdk.ExecutionSample")) {
                es.withPeriod(Duration.ofMillis(10));
            } else if (s.equals("jdk.CPUTimeSample")) {
                es.with("throttle", "10ms");
            } else {
                es.with("throttle", "1000/s");
            }
        }
    }

    static String json(Map<String, Counts> m) {
        StringBuilder sb = new StringBuilder("{");
        for (Map.Entry<String, Counts> e : m.entrySet()) {
            if (sb.length() > 1) {
                sb.append(',');
            }
            sb.append('"').append(e.getKey()).append("\":{\"samples\":").append(e.getValue().samples)
                    .append(",\"no_thread\":").append(e.getValue().noThread).append('}');
        }
        return sb.append('}').toString();
    }

    public static void main(String[] args) throws Exception {
        double seconds = Double.parseDouble(args[0]);
        String mode = args[1];
        String head = "{\"workload\":\"ShortLived\",\"java\":\"" + System.getProperty("java.version") + "\"";
        if (mode.equals("agent")) {
            long tasks = run(seconds);
            System.out.println(head + ",\"tasks\":" + tasks + "}");
            return;
        }
        if (!mode.equals("probe") || args.length < 3) {
            System.err.println("ShortLived: usage: SECONDS agent | SECONDS probe FILE");
            System.exit(2);
        }
        Path file = Paths.get(args[2]);
        Map<String, Counts> streamed = table();
        Map<String, Counts> filed = table();
        try (RecordingStream stream = new RecordingStream(); Recording recording = new Recording()) {
            enable(streamed, stream::enable);
            enable(filed, recording::enable);
            stream.onEvent(e -> count(streamed, e));
            stream.startAsync();
            recording.setToDisk(true);
            recording.setDestination(file);
            recording.start();
            long tasks = run(seconds);
            recording.stop();
            // The stream's last flush comes within a second; its events were all committed before
            // the recording stopped, so what arrives after this wait adds nothing to compare.
            Thread.sleep(1500);
            for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
                count(filed, e);
            }
            System.out.println(head + ",\"tasks\":" + tasks + ",\"stream\":" + json(streamed) + ",\"file\":"
                    + json(filed) + "}");
        }
    }
}
