package dev.jfrctx.javaagent;

import java.util.ArrayList;
import java.util.List;

/**
 * The Java agent's options: {@code -javaagent:jfrctx-agent.jar=exclude=PREFIX;PREFIX,threads=off},
 * or the system properties {@code jfrctx.javaagent.exclude} and {@code jfrctx.javaagent.threads}
 * (an agent argument wins over the property).
 *
 * <ul>
 *   <li>{@code exclude}: class-name prefixes ({@code com.acme.} for a package, {@code
 *       com.acme.Pool} for a class and its nested classes) of tasks, executors and threads that are
 *       left alone: a task of such a class, a task handed to such an executor (a subclass of
 *       {@code ThreadPoolExecutor}, say) and a thread of such a class get no context.</li>
 *   <li>{@code threads}: {@code on} (default) or {@code off}: whether a new thread starts with the
 *       context of the thread that started it.</li>
 * </ul>
 */
final class Options {

    final String[] excluded;
    final boolean threads;

    private Options(String[] excluded, boolean threads) {
        this.excluded = excluded;
        this.threads = threads;
    }

    /**
     * Parses the agent argument and the system properties.
     *
     * @throws IllegalArgumentException with one line naming the problem
     */
    static Options parse(String args, String excludeProperty, String threadsProperty) {
        String exclude = excludeProperty;
        String threads = threadsProperty;
        if (args != null && !args.trim().isEmpty()) {
            for (String part : args.split(",")) {
                int eq = part.indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("-javaagent option '" + part
                            + "' is not key=value (keys: exclude, threads)");
                }
                String key = part.substring(0, eq).trim();
                String value = part.substring(eq + 1).trim();
                switch (key) {
                    case "exclude":
                        exclude = value;
                        break;
                    case "threads":
                        threads = value;
                        break;
                    default:
                        throw new IllegalArgumentException("unknown -javaagent option '" + key
                                + "' (keys: exclude, threads)");
                }
            }
        }
        List<String> prefixes = new ArrayList<>();
        if (exclude != null) {
            for (String p : exclude.split(";")) {
                String prefix = p.trim();
                if (prefix.isEmpty()) {
                    continue;
                }
                if (!prefix.matches("[\\p{javaJavaIdentifierPart}.$]+")) {
                    throw new IllegalArgumentException("exclude: '" + prefix
                            + "' is not a class or package name prefix");
                }
                prefixes.add(prefix);
            }
        }
        boolean threadStarts = true;
        if (threads != null) {
            switch (threads.trim()) {
                case "on":
                    break;
                case "off":
                    threadStarts = false;
                    break;
                default:
                    throw new IllegalArgumentException("threads: '" + threads
                            + "' is neither on nor off");
            }
        }
        return new Options(prefixes.toArray(new String[0]), threadStarts);
    }
}
