package dev.jfrctx.internal;

import java.lang.reflect.Field;
import java.util.Map;
import java.util.TreeMap;

/**
 * Read-back of the current thread's context, for jfrctx's own tests. <b>Not API</b>: the JEP's
 * API deliberately offers no way to read values back, so this class is a test source only
 * ({@code java/src/testFixtures/java}): compiled into the Java unit tests (Gradle's test source set)
 * and, next to the facade, into the integration-test workloads ({@code tests/java}), never into
 * {@code jfrctx.jar}.
 *
 * <p>It uses only what the facade needs itself ({@link ThreadState#current},
 * {@link ThreadState#context}, {@link ContextData#id}) plus a reflective read of
 * {@code ContextData.kv}: no package-private access. Under the Java agent the facade classes are
 * the agent's bootstrap copies (the application loader delegates {@code dev.jfrctx.internal.*} to
 * them) while this class, absent from that copy, is the application loader's own: the same package
 * name in another run-time package, where package-private members are out of reach.
 */
public final class Introspection {

    /** {@code ContextData.kv}, {@code [k0, v0, k1, v1, ...]} sorted by key. */
    private static final Field KV;

    static {
        try {
            KV = ContextData.class.getDeclaredField("kv");
            KV.setAccessible(true);
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new ExceptionInInitializerError(
                    "Introspection: cannot read ContextData.kv (renamed?): " + e);
        }
    }

    private Introspection() {
    }

    /**
     * Returns a copy of the context installed on the calling thread.
     *
     * @return a new map sorted by key, empty when no context is installed
     */
    public static Map<String, String> currentEntries() {
        String[] kv;
        try {
            kv = (String[]) KV.get(ThreadState.current().context());
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
        Map<String, String> map = new TreeMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            map.put(kv[i], kv[i + 1]);
        }
        return map;
    }

    /**
     * Returns the agent id of the context installed on the calling thread.
     *
     * @return the id, 0 when empty or without agent
     */
    public static long currentId() {
        return ThreadState.current().context().id();
    }

    /**
     * Returns whether the agent link is live.
     *
     * @return true when the agent is present and has not failed
     */
    public static boolean agentLive() {
        return AgentLink.isLive();
    }
}
