package dev.jfrctx.bench.server;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * CPU time of this JVM's threads by group, from Linux's {@code /proc/self/task/TID/schedstat}
 * (its first field: nanoseconds on a CPU). The groups and their thread-name prefixes are
 * {@code run.py}'s own table ({@code GROUPS}), passed as {@code --phase-groups
 * name=prefix|prefix;name=...}, so that phases and whole runs group threads alike. A thread's
 * name is read once, when it is first seen; after that only the matching threads'
 * {@code schedstat} is read. A thread that ends keeps the CPU it had at its last read in its
 * group (HotSpot starts and stops C2 compiler threads as the JIT's queue grows and shrinks, and a
 * pool may retire idle threads): otherwise its whole life's CPU would leave its group in the
 * phase it ended in. Only what it ran between that read and its end is lost.
 */
final class ThreadGroups {
    private static final Path TASKS = Path.of("/proc/self/task");
    private final String[] names;
    private final String[][] prefixes;
    /** Thread id → group (an index of {@link #names}, -1 none). */
    private final Map<String, Integer> byThread = new HashMap<>();
    /** Thread id → its CPU at the last read, for the threads of a group. */
    private final Map<String, Long> lastNs = new HashMap<>();
    /** By group: the CPU of its threads that ended, at their last read. */
    private final long[] endedNs;

    /** {@code spec}: {@code name=prefix|prefix;name=...}; empty for no group. */
    ThreadGroups(String spec) {
        String[] groups = spec.isEmpty() ? new String[0] : spec.split(";");
        names = new String[groups.length];
        endedNs = new long[groups.length];
        prefixes = new String[groups.length][];
        for (int g = 0; g < groups.length; g++) {
            int eq = groups[g].indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException(
                        "--phase-groups: '" + groups[g] + "' is not name=prefix|...");
            }
            names[g] = groups[g].substring(0, eq);
            prefixes[g] = groups[g].substring(eq + 1).split("\\|");
        }
    }

    /** The groups' names, in the order of {@link #cpuNs}. */
    String[] names() {
        return names.clone();
    }

    /** Nanoseconds on a CPU so far, by group; zeros where /proc is absent. */
    long[] cpuNs() {
        long[] ns = new long[names.length];
        if (names.length == 0) {
            return ns;
        }
        Map<String, Long> seen = new HashMap<>();
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(TASKS)) {
            for (Path task : tasks) {
                String tid = task.getFileName().toString();
                int g = byThread.computeIfAbsent(tid, t -> groupOf(task));
                if (g >= 0) {
                    long cpu = onCpu(task, lastNs.getOrDefault(tid, 0L));
                    seen.put(tid, cpu);
                    ns[g] += cpu;
                }
            }
        } catch (IOException | RuntimeException e) {
            return ns; // not Linux, or /proc unreadable: the phases still have the process's CPU
        }
        lastNs.forEach((tid, cpu) -> {
            if (!seen.containsKey(tid)) {
                endedNs[byThread.remove(tid)] += cpu;
            }
        });
        lastNs.clear();
        lastNs.putAll(seen);
        for (int g = 0; g < ns.length; g++) {
            ns[g] += endedNs[g];
        }
        return ns;
    }

    private int groupOf(Path task) {
        try {
            String comm = Files.readString(task.resolve("comm"));
            for (int g = 0; g < prefixes.length; g++) {
                for (String prefix : prefixes[g]) {
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

    /** The task's CPU so far; {@code last} when it ended between the listing and the read. */
    private static long onCpu(Path task, long last) {
        try {
            String s = Files.readString(task.resolve("schedstat"));
            return Long.parseLong(s.substring(0, s.indexOf(' ')));
        } catch (IOException | RuntimeException e) {
            return last;
        }
    }
}
