package dev.jfrctx.internal;

import java.util.Map;

/**
 * Read-back of the current thread's context, for jfrctx's own tests. <b>Not API</b>: the JEP's
 * API deliberately offers no way to read values back, so this class is a test source only
 * ({@code java/src/testFixtures/java}): compiled into the Java unit tests (Gradle's test source set)
 * and, next to the facade, into the integration-test workloads ({@code tests/java}), never into
 * {@code jfrctx.jar}.
 */
public final class Introspection {

    private Introspection() {
    }

    /**
     * Returns a copy of the context installed on the calling thread.
     *
     * @return a new map sorted by key, empty when no context is installed
     */
    public static Map<String, String> currentEntries() {
        return ThreadState.current().context().toSortedMap();
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
