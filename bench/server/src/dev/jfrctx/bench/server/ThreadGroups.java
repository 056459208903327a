package dev.jfrctx.bench.server;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * CPU time of this JVM's threads by group, from Linux's {@code /proc/self/task/TID/schedstat}
 * (its first field: nanoseconds on a CPU), grouped by the thread's name as {@code run.py}'s
 * groups are ({@link #GROUPS}): the agent's threads, the JDK's JFR threads, the request threads
 * (Tomcat's executor, or the carriers of its virtual threads) and the GC's. A thread's name is
 * read once, when it is first seen; after that only the matching threads' {@code schedstat} is
 * read. Threads that ended are no longer counted: every group here lives as long as the JVM
 * (Tomcat's executor keeps its threads under a steady load).
 */
final class ThreadGroups {
    private static final Path TASKS = Path.of("/proc/self/task");
    /** Group names, for the phases' JSON, and the name prefixes of their threads' comm. */
    static final String[] GROUPS = {"jfrctx", "jfr", "request", "gc"};
    private static final String[][] PREFIXES = {
        {"jfrctx-"}, {"JFR "}, {"req-", "ForkJoinPool-"}, {"GC Thread", "G1 "}};
    /** Thread id → group (an index of {@link #GROUPS}, -1 none). */
    private final Map<String, Integer> groups = new HashMap<>();

    /** Nanoseconds on a CPU so far, by group; zeros where /proc is absent. */
    long[] cpuNs() {
        long[] ns = new long[GROUPS.length];
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
            for (int g = 0; g < PREFIXES.length; g++) {
                for (String prefix : PREFIXES[g]) {
                    if (comm.startsWith(prefix)) {
                        return g;
                    }
                }
            }
            return -1;
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
