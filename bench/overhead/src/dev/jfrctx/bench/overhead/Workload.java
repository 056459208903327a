package dev.jfrctx.bench.overhead;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A CPU-bound application that switches context at a high rate: {@code threads} workers, each
 * repeating "activate one of 8 contexts, compute for ~{@code work} steps, close". The same
 * program runs without JFR, with JFR's execution sampler alone, and with jfrctx (bench.sh); it
 * reports its own throughput and CPU use over the measurement window as one JSON line on stdout.
 *
 * <pre>
 * java ... dev.jfrctx.bench.overhead.Workload CONFIG THREADS WARMUP_S MEASURE_S WORK
 * </pre>
 *
 * CPU: {@code OperatingSystemMXBean.getProcessCpuTime()} over the window, and per thread from
 * {@code /proc/self/task/TID/stat} (utime + stime, clock ticks) grouped by thread name, so the
 * agent's own threads and JFR's are visible.
 */
public final class Workload {

    private static final RecordingContextKey ENDPOINT = RecordingContextKey.forName("endpoint");
    private static final RecordingContextKey TENANT = RecordingContextKey.forName("tenant");
    private static final int CONTEXTS = 8;
    /** Slot stride in the counter array (longs): one cache line per worker. */
    private static final int STRIDE = 16;

    private static volatile boolean running = true;
    private static volatile long blackhole;

    private Workload() {
    }

    public static void main(String[] args) throws Exception {
        String config = args[0];
        int threads = Integer.parseInt(args[1]);
        double warmupS = Double.parseDouble(args[2]);
        double measureS = Double.parseDouble(args[3]);
        int work = Integer.parseInt(args[4]);

        RecordingContext.Snapshot[] snapshots = new RecordingContext.Snapshot[CONTEXTS];
        for (int i = 0; i < CONTEXTS; i++) {
            try (RecordingContext c = RecordingContext.where(ENDPOINT, "/endpoint/" + i)
                    .where(TENANT, "tenant-" + (i % 3)).build()) {
                snapshots[i] = RecordingContext.snapshot();
            }
        }
        AtomicLongArray counts = new AtomicLongArray(threads * STRIDE);
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int slot = t * STRIDE;
            final long seed = 0x9E3779B97F4A7C15L * (t + 1);
            workers[t] = new Thread(() -> run(snapshots, counts, slot, seed, work), "work-" + t);
            workers[t].start();
        }

        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        Thread.sleep((long) (warmupS * 1000));
        Map<String, Long> ticks0 = threadTicks();
        long cpu0 = os.getProcessCpuTime();
        long ops0 = sum(counts, threads);
        long t0 = System.nanoTime();
        Thread.sleep((long) (measureS * 1000));
        long t1 = System.nanoTime();
        long ops1 = sum(counts, threads);
        long cpu1 = os.getProcessCpuTime();
        Map<String, Long> ticks1 = threadTicks();
        running = false;
        for (Thread w : workers) {
            w.join();
        }

        double secs = (t1 - t0) / 1e9;
        long ops = ops1 - ops0;
        double cpuS = (cpu1 - cpu0) / 1e9;
        StringBuilder json = new StringBuilder();
        json.append(String.format(Locale.ROOT,
                "{\"config\":\"%s\",\"jdk\":\"%s\",\"threads\":%d,\"work\":%d,\"seconds\":%.3f,\"ops\":%d,"
                        + "\"ops_per_s\":%.1f,\"switches_per_s_per_thread\":%.1f,\"cpu_s\":%.4f,\"cores\":%.4f,"
                        + "\"cpu_ns_per_op\":%.2f,\"thread_cpu_cores\":{",
                config, Runtime.version(), threads, work, secs, ops, ops / secs,
                2 * ops / secs / threads, cpuS, cpuS / secs, (cpu1 - cpu0) / (double) ops));
        double hz = 100.0; // USER_HZ on Linux
        boolean first = true;
        for (Map.Entry<String, Long> e : delta(ticks0, ticks1).entrySet()) {
            if (!first) {
                json.append(',');
            }
            first = false;
            json.append(String.format(Locale.ROOT, "\"%s\":%.4f", e.getKey(), e.getValue() / hz / secs));
        }
        json.append("}}");
        System.out.println(json);
        System.out.flush();
        if (blackhole == 42) {
            System.out.println("");
        }
    }

    private static void run(RecordingContext.Snapshot[] snapshots, AtomicLongArray counts, int slot,
            long seed, int work) {
        long x = seed;
        long n = 0;
        while (running) {
            RecordingContext.Activation a = snapshots[(int) (n & (CONTEXTS - 1))].activate();
            try {
                for (int i = 0; i < work; i++) {
                    x = x * 6364136223846793005L + 1442695040888963407L;
                    x ^= x >>> 29;
                }
            } finally {
                a.close();
            }
            n++;
            counts.lazySet(slot, n);
        }
        blackhole += x;
    }

    private static long sum(AtomicLongArray counts, int threads) {
        long s = 0;
        for (int t = 0; t < threads; t++) {
            s += counts.get(t * STRIDE);
        }
        return s;
    }

    /** CPU ticks (utime + stime) per thread-name group, from /proc/self/task. */
    private static Map<String, Long> threadTicks() throws IOException {
        Map<String, Long> out = new LinkedHashMap<>();
        Path tasks = Paths.get("/proc/self/task");
        if (!Files.isDirectory(tasks)) {
            return out;
        }
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(tasks)) {
            for (Path task : ds) {
                try {
                    String comm = new String(Files.readAllBytes(task.resolve("comm")), StandardCharsets.UTF_8).trim();
                    String stat = new String(Files.readAllBytes(task.resolve("stat")), StandardCharsets.UTF_8);
                    // Fields after the command (which is in parentheses and may hold spaces).
                    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    long ticks = Long.parseLong(f[11]) + Long.parseLong(f[12]); // utime, stime
                    out.merge(group(comm), ticks, Long::sum);
                } catch (IOException | RuntimeException e) {
                    // the thread ended meanwhile
                }
            }
        }
        return out;
    }

    private static String group(String comm) {
        if (comm.startsWith("work-")) {
            return "workload";
        }
        if (comm.startsWith("jfrctx")) {
            return comm; // jfrctx-worker, jfrctx-stream
        }
        if (comm.startsWith("JFR") || comm.startsWith("JfrThreadSampl")) {
            return "jfr";
        }
        if (comm.startsWith("C1 ") || comm.startsWith("C2 ")) {
            return "jit";
        }
        if (comm.startsWith("GC ") || comm.startsWith("G1 ")) {
            return "gc";
        }
        return "other";
    }

    private static Map<String, Long> delta(Map<String, Long> a, Map<String, Long> b) {
        Map<String, Long> out = new LinkedHashMap<>();
        for (Map.Entry<String, Long> e : b.entrySet()) {
            out.put(e.getKey(), e.getValue() - a.getOrDefault(e.getKey(), 0L));
        }
        return out;
    }
}
