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
 * {@code schedstat} is read. Threads that ended are no longer counted: the groups read here (the
 * agent's, JFR's, the request threads or their carriers, the GC's) live as long as the JVM under
 * a steady load.
 */
final class ThreadGroups {
    private static final Path TASKS = Path.of("/proc/self/task");
    private final String[] names;
    private final String[][] prefixes;
    /** Thread id → group (an index of {@link #names}, -1 none). */
    private final Map<String, Integer> byThread = new HashMap<>();

    /** {@code spec}: {@code name=prefix|prefix;name=...}; empty for no group. */
    ThreadGroups(String spec) {
        String[] groups = spec.isEmpty() ? new String[0] : spec.split(";");
        names = new String[groups.length];
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
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(TASKS)) {
            for (Path task : tasks) {
                int g = byThread.computeIfAbsent(task.getFileName().toString(), t -> groupOf(task));
                if (g >= 0) {
                    ns[g] += onCpu(task);
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or /proc unreadable: the phases still have the process's CPU
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

    private static long onCpu(Path task) {
        try {
            String s = Files.readString(task.resolve("schedstat"));
            return Long.parseLong(s.substring(0, s.indexOf(' ')));
        } catch (IOException | RuntimeException e) {
            return 0; // the thread ended between the listing and the read
        }
    }
}
