package dev.jfrctx.bench.server;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

/**
 * Phases of one JVM ({@code --filter A/B}): the filter runs mode A, then B, then A, ... for
 * {@code --phase-ms} each, and this thread records, per phase, the process CPU
 * ({@code OperatingSystemMXBean.getProcessCpuTime()}: nanoseconds, counted by HotSpot in 10 ms
 * clock ticks), the requests that entered the filter, the wall time, the thread CPU spent inside
 * {@code /app/cpu}'s loop, and the CPU of the process's thread groups ({@link ThreadGroups}).
 * The harness ({@code run.py}) pairs each B phase with the A phases on either side: the JVM, its
 * compiled code, its heap and the machine's load are the same for both, so the ratio is what the
 * filter's mode B costs over mode A, free of the JVM-to-JVM spread that separate JVMs carry.
 */
final class Phases implements Runnable {
    private final BenchFilter filter;
    private final String[] modes;
    private final long phaseMs;
    private final ThreadGroups groups;
    private final com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private final List<String> done = new ArrayList<>();

    /** The counters at a phase boundary. */
    private record Mark(long nano, long cpu, long served, long loopNs, long loopCalls,
            long[] groupNs) {}

    private Phases(BenchFilter filter, String[] modes, long phaseMs, ThreadGroups groups) {
        this.filter = filter;
        this.modes = modes;
        this.phaseMs = phaseMs;
        this.groups = groups;
    }

    /** Starts switching {@code filter} between its two modes every {@code phaseMs}. */
    static Phases start(BenchFilter filter, String[] modes, long phaseMs, ThreadGroups groups) {
        Phases p = new Phases(filter, modes, phaseMs, groups);
        Thread t = new Thread(p, "bench-phases");
        t.setDaemon(true);
        t.start();
        return p;
    }

    @Override
    public void run() {
        String[] names = groups.names();
        Mark at = mark();
        for (int i = 0; ; i++) {
            int mode = i & 1;
            filter.phase(mode);
            try {
                Thread.sleep(phaseMs);
            } catch (InterruptedException e) {
                return;
            }
            Mark end = mark();
            StringBuilder line = new StringBuilder()
                    .append("{\"mode\":\"").append(modes[mode])
                    .append("\",\"start\":").append(at.nano)
                    .append(",\"ns\":").append(end.nano - at.nano)
                    .append(",\"cpu_ns\":").append(end.cpu - at.cpu)
                    .append(",\"served\":").append(end.served - at.served)
                    .append(",\"loop_ns\":").append(end.loopNs - at.loopNs)
                    .append(",\"loop_calls\":").append(end.loopCalls - at.loopCalls);
            for (int g = 0; g < names.length; g++) {
                line.append(",\"").append(names[g]).append("_ns\":")
                        .append(end.groupNs[g] - at.groupNs[g]);
            }
            synchronized (this) {
                done.add(line.append('}').toString());
            }
            at = end;
        }
    }

    private Mark mark() {
        return new Mark(System.nanoTime(), os.getProcessCpuTime(), BenchServer.SERVED.get(),
                BenchServlet.LOOP_NS.sum(), BenchServlet.LOOP_CALLS.sum(), groups.cpuNs());
    }

    /** The phases completed so far, as a JSON array. */
    synchronized String json() {
        return "[" + String.join(",", done) + "]";
    }
}
