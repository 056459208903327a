package dev.jfrctx.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * CPU time of the benchmark's worker threads per operation ({@code cpu.time.norm}, ns/op).
 *
 * <p>On a shared machine a benchmark thread is descheduled now and then, and wall-clock time per
 * op grows with the load of other processes; the thread's own CPU time does not. Both are
 * reported; the summary's ratios use this one.
 *
 * <p>Benchmarks whose work runs on threads they start ({@link FreshThreadBench}) get the whole
 * process's CPU time per operation instead: the new threads, the carriers that run them and the
 * agent's own threads all count.
 */
public final class CpuTimeProfiler implements InternalProfiler {

    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    private Map<Long, Long> before = new HashMap<>();
    private long processBefore;
    private boolean wholeProcess;

    @Override
    public String getDescription() {
        return "CPU time of the JMH worker threads per op";
    }

    @Override
    public void beforeIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams) {
        wholeProcess = benchmarkParams.getBenchmark().contains(".FreshThreadBench.");
        before = workerCpu();
        processBefore = processCpu();
    }

    /** The process's CPU time (all threads), -1 when the JVM does not say. */
    private static long processCpu() {
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        return os instanceof com.sun.management.OperatingSystemMXBean
                ? ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime() : -1;
    }

    @Override
    public List<? extends Result> afterIteration(BenchmarkParams benchmarkParams,
            IterationParams iterationParams, IterationResult result) {
        long processAfter = processCpu();
        Map<Long, Long> after = workerCpu();
        long cpu = 0;
        if (wholeProcess) {
            cpu = processBefore < 0 || processAfter < 0 ? 0 : processAfter - processBefore;
        } else {
            for (Map.Entry<Long, Long> e : after.entrySet()) {
                Long b = before.get(e.getKey());
                if (b != null) {
                    cpu += e.getValue() - b;
                }
            }
        }
        long ops = result.getMetadata().getAllOps();
        double perOp = ops == 0 || cpu == 0 ? Double.NaN : (double) cpu / ops;
        return List.of(new ScalarResult("cpu.time.norm", perOp, "ns/op", AggregationPolicy.AVG));
    }

    private Map<Long, Long> workerCpu() {
        Map<Long, Long> out = new HashMap<>();
        long[] ids = threads.getAllThreadIds();
        for (ThreadInfo info : threads.getThreadInfo(ids)) {
            if (info != null && info.getThreadName().contains("jmh-worker")) {
                long t = threads.getThreadCpuTime(info.getThreadId());
                if (t >= 0) {
                    out.put(info.getThreadId(), t);
                }
            }
        }
        return out;
    }
}
