package dev.jfrctx;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * The agent's filter and listener natives ({@code dev.jfrctx.agent.Natives.setFilter},
 * {@code setListening}, {@code pollSamples}), found reflectively in the bootstrap class loader
 * like {@code AgentLink} finds the others. Without the agent (or with an agent that lacks them)
 * every handle is null and callers fall back to no-ops.
 */
final class AgentControl {
    static final MethodHandle SET_FILTER;
    static final MethodHandle SET_LISTENING;
    static final MethodHandle POLL_SAMPLES;

    static {
        MethodHandle filter = null;
        MethodHandle listening = null;
        MethodHandle poll = null;
        try {
            Class<?> natives = Class.forName("dev.jfrctx.agent.Natives", true, null);
            MethodHandles.Lookup lookup = MethodHandles.publicLookup();
            filter = lookup.findStatic(natives, "setFilter",
                    MethodType.methodType(void.class, String.class));
            listening = lookup.findStatic(natives, "setListening",
                    MethodType.methodType(void.class, boolean.class, long.class));
            poll = lookup.findStatic(natives, "pollSamples",
                    MethodType.methodType(byte[].class, long.class));
        } catch (Throwable absent) {
            filter = listening = poll = null;
        }
        SET_FILTER = filter;
        SET_LISTENING = listening;
        POLL_SAMPLES = poll;
    }

    private AgentControl() {
    }

    /** Whether in-process listeners can be served. */
    static boolean canListen() {
        return SET_LISTENING != null && POLL_SAMPLES != null;
    }

    /**
     * Hands a filter spec to the agent; a no-op without the agent.
     *
     * @param spec the text form, "" for no filter
     */
    static void setFilter(String spec) {
        if (SET_FILTER == null) {
            return;
        }
        try {
            SET_FILTER.invokeExact(spec);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("jfrctx: setting the filter failed: " + t, t);
        }
    }

    static void setListening(boolean on, long listenerThreadId) {
        if (SET_LISTENING == null) {
            return;
        }
        try {
            SET_LISTENING.invokeExact(on, listenerThreadId);
        } catch (Throwable t) {
            System.err.println("jfrctx: warning: switching listeners " + (on ? "on" : "off")
                    + " failed: " + t);
        }
    }

    static byte[] pollSamples(long timeoutMillis) throws Throwable {
        return (byte[]) POLL_SAMPLES.invokeExact(timeoutMillis);
    }
}
