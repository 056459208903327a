package dev.jfrctx.bench.server;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

/**
 * Phases of one JVM ({@code --filter A/B}): the filter runs mode A, then B, then A, ... for
 * {@code --phase-ms} each, and this thread records, per phase, the process CPU
 * ({@code OperatingSystemMXBean.getProcessCpuTime()}, nanoseconds), the requests that entered
 * the filter, the wall time, the thread CPU spent inside {@code /app/cpu}'s loop, and the CPU of
 * the process's thread groups ({@link ThreadGroups}). The harness
 * ({@code run.py}) pairs each B phase with the A phases on either side: the JVM, its compiled
 * code, its heap and the machine's load are the same for both, so the ratio is what the filter's
 * mode B costs over mode A, free of the JVM-to-JVM spread that separate JVMs carry.
 */
final class Phases implements Runnable {
    private final BenchFilter filter;
    private final String[] names;
    private final long phaseMs;
    private final com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private final List<String> done = new ArrayList<>();
    private final ThreadGroups threadGroups = new ThreadGroups();

    private Phases(BenchFilter filter, String[] names, long phaseMs) {
        this.filter = filter;
        this.names = names;
        this.phaseMs = phaseMs;
    }

    /** Starts switching {@code filter} between its two modes every {@code phaseMs}. */
    static Phases start(BenchFilter filter, String[] names, long phaseMs) {
        Phases p = new Phases(filter, names, phaseMs);
        Thread t = new Thread(p, "bench-phases");
        t.setDaemon(true);
        t.start();
        return p;
    }

    @Override
    public void run() {
        long[] at = now();
        for (int i = 0; ; i++) {
            int mode = i & 1;
            filter.phase(mode);
            try {
                Thread.sleep(phaseMs);
            } catch (InterruptedException e) {
                return;
            }
            long[] end = now();
            String line = "{\"mode\":\"" + names[mode] + "\",\"start\":" + at[0] + ",\"ns\":" + (end[0] - at[0])
                    + ",\"cpu_ns\":" + (end[1] - at[1]) + ",\"served\":" + (end[2] - at[2])
                    + ",\"loop_ns\":" + (end[3] - at[3]) + ",\"loop_calls\":" + (end[4] - at[4])
                    + groups(at, end) + "}";
            synchronized (this) {
                done.add(line);
            }
            at = end;
        }
    }

    private static final int FIXED = 5;

    private long[] now() {
        long[] threads = threadGroups.cpuNs();
        long[] at = new long[FIXED + threads.length];
        long[] fixed = {System.nanoTime(), os.getProcessCpuTime(), BenchServer.SERVED.get(),
            BenchServlet.LOOP_NS.sum(), BenchServlet.LOOP_CALLS.sum()};
        System.arraycopy(fixed, 0, at, 0, FIXED);
        System.arraycopy(threads, 0, at, FIXED, threads.length);
        return at;
    }

    /** {@code ,"<group>_ns":N} for each thread group of {@link ThreadGroups}. */
    private static String groups(long[] at, long[] end) {
        StringBuilder sb = new StringBuilder();
        for (int g = 0; g < ThreadGroups.GROUPS.length; g++) {
            sb.append(",\"").append(ThreadGroups.GROUPS[g]).append("_ns\":")
                    .append(end[FIXED + g] - at[FIXED + g]);
        }
        return sb.toString();
    }

    /** The phases completed so far, as a JSON array. */
    synchronized String json() {
        return "[" + String.join(",", done) + "]";
    }
}
