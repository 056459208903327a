package dev.jfrctx.internal;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;

/**
 * The agent's word that says its worker is in a long idle sleep, and the call that ends it.
 * <b>Not API</b>: internal to the jfrctx facade.
 *
 * <p>After rounds that found nothing to drain the worker sleeps up to ten times its {@code drain}
 * interval. Before the first such sleep it sets this word (one round at the usual interval comes
 * between, so that what a thread wrote before it could see the word is drained at the usual
 * pace); every thread reads the word at each half lap of its ring ({@link ThreadLog#transition})
 * and, when it is set, calls {@code Natives.wake}, which clears it and ends the sleep. So a burst
 * after a quiet spell is drained with at least half a ring to spare, as at the usual pace, and a
 * busy JVM (the word clear) pays one load per half lap.
 */
final class WorkerWake {

    /** The word's address for {@link AgentLink#RING_GET}; 0 without the agent's ring writer. */
    private static final long ADDRESS;
    /** The word as a buffer, when there is no ring writer; null without the agent's word. */
    private static final ByteBuffer WORD;
    /** {@code Natives.wake()}; null with an agent that has no idle stretch. */
    private static final MethodHandle WAKE;

    static {
        ByteBuffer word = null;
        MethodHandle wake = null;
        long address = 0;
        if (AgentLink.isLive()) {
            try {
                Class<?> natives = Class.forName("dev.jfrctx.agent.Natives", true, null);
                MethodHandles.Lookup lookup = MethodHandles.publicLookup();
                MethodHandle wordOf = lookup.findStatic(natives, "wakeWord",
                        MethodType.methodType(ByteBuffer.class));
                wake = lookup.findStatic(natives, "wake", MethodType.methodType(void.class));
                word = (ByteBuffer) wordOf.invokeExact();
                boolean writer = AgentLink.BUFFER_ADDRESS != null && AgentLink.RING_GET != null;
                if (word != null && writer) {
                    address = (long) AgentLink.BUFFER_ADDRESS.invokeExact(word);
                }
            } catch (Throwable absent) {
                // An agent without the idle stretch: its worker never sleeps long.
                word = null;
                wake = null;
                address = 0;
            }
        }
        WORD = word != null && address == 0 ? word : null;
        ADDRESS = address;
        WAKE = word != null ? wake : null;
    }

    private WorkerWake() {
    }

    /** Whether the worker is in a long sleep (a plain load; constants fold the rest). */
    static boolean asleep() {
        if (ADDRESS != 0) {
            try {
                return (long) AgentLink.RING_GET.invokeExact(ADDRESS) != 0;
            } catch (Throwable t) { // cannot happen: it only reads memory
                return false;
            }
        }
        return WORD != null && WORD.getLong(0) != 0;
    }

    /**
     * Ends the worker's long sleep ({@code Natives.wake}). Called after the transition was
     * written, so a failure changes nothing recorded: it disables the link as any other.
     */
    static void wake() {
        if (WAKE == null || !AgentLink.isLive()) {
            return;
        }
        try {
            WAKE.invokeExact();
        } catch (Throwable t) {
            AgentLink.fail("Natives.wake", t);
        }
    }
}
