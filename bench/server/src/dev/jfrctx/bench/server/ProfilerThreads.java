package dev.jfrctx.bench.server;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * CPU time of this JVM's profiler threads, from Linux's {@code /proc/self/task/TID/schedstat}
 * (its first field: nanoseconds on a CPU), grouped by the thread's name as {@code run.py}'s
 * groups are: {@code jfrctx-*} (the agent's worker and its helpers) and {@code JFR *} (the JDK's
 * recorder, periodic and stream threads). A thread's name is read once, when it is first seen;
 * after that only the matching threads' {@code schedstat} is read. Threads that ended are no
 * longer counted; the profilers' threads live as long as the JVM.
 */
final class ProfilerThreads {
    private static final Path TASKS = Path.of("/proc/self/task");
    /** Thread id → group (0 jfrctx, 1 JFR, -1 neither). */
    private final Map<String, Integer> groups = new HashMap<>();

    /** Nanoseconds on a CPU so far: {jfrctx threads, JFR threads}; zeros where /proc is absent. */
    long[] cpuNs() {
        long[] ns = new long[2];
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(TASKS)) {
            for (Path task : tasks) {
                int g = groups.computeIfAbsent(task.getFileName().toString(), t -> groupOf(task));
                if (g >= 0) {
                    ns[g] += onCpu(task);
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or /proc unreadable: the phases still have the process's CPU
        }
        return ns;
    }

    private static int groupOf(Path task) {
        try {
            String comm = Files.readString(task.resolve("comm"));
            return comm.startsWith("jfrctx-") ? 0 : comm.startsWith("JFR ") ? 1 : -1;
        } catch (IOException e) {
            return -1;
        }
    }

    private static long onCpu(Path task) {
        try {
            String s = Files.readString(task.resolve("schedstat"));
            return Long.parseLong(s.substring(0, s.indexOf(' ')));
        } catch (IOException | RuntimeException e) {
            return 0; // the thread ended between the listing and the read
        }
    }
}
