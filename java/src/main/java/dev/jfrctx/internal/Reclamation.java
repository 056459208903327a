package dev.jfrctx.internal;

import java.lang.ref.Cleaner;

/**
 * Tells the agent when facade objects it backs have become unreachable. <b>Not API</b>.
 *
 * <p>Context ids are queued by a {@link Cleaner} action: ids numbered by {@code Definitions} go
 * back through it (the stream's next batch tells the agent), ids from {@code Natives.intern} in
 * the {@code released} argument of the next such call; either way reclaiming costs no JNI call
 * of its own. Rings are handed back with {@code Natives.release} from the Cleaner's thread.
 * The Cleaner (and its thread) is created only when the agent is live.
 */
final class Reclamation {

    private static final ReleasedIds RELEASED = new ReleasedIds();

    private Reclamation() {
    }

    /** Lazily created, so that no Cleaner thread starts without an agent. */
    private static final class Holder {
        static final Cleaner CLEANER = Cleaner.create();
    }

    /** Cleaner action for a context id. Must not reference the ContextData. */
    private static final class ReleaseContext implements Runnable {
        private final long id;

        ReleaseContext(long id) {
            this.id = id;
        }

        @Override
        public void run() {
            if (id >= AgentLink.FIRST_DEFINED_ID) {
                AgentLink.undefine(id); // queued for the stream's next batch, no JNI call
            } else {
                RELEASED.add(id);
            }
        }
    }

    /** Cleaner action for a ring. Must not reference the ThreadLog or its buffer. */
    static final class ReleaseRing implements Runnable {
        private final long handle;
        /** The log handed the ring back itself ({@link ThreadLog#retire}): nothing left to do. */
        private volatile boolean done;

        ReleaseRing(long handle) {
            this.handle = handle;
        }

        /** The holder was released another way; the Cleaner's run does nothing. */
        void cancel() {
            done = true;
        }

        @Override
        public void run() {
            if (!done) {
                AgentLink.release(handle);
            }
        }
    }

    /**
     * Queues {@code id} for release once {@code data} is unreachable. If that cannot be arranged,
     * the link degrades and the id is never released.
     */
    static void releaseContextWhenUnreachable(ContextData data, long id) {
        register(data, new ReleaseContext(id));
    }

    /**
     * Releases the ring {@code handle} once {@code log} is unreachable, unless the returned action
     * is cancelled first. If that cannot be arranged, the link degrades and the ring is never
     * released.
     */
    static ReleaseRing releaseRingWhenUnreachable(ThreadLog log, long handle) {
        ReleaseRing action = new ReleaseRing(handle);
        register(log, action);
        return action;
    }

    private static void register(Object watched, Runnable action) {
        try {
            Holder.CLEANER.register(watched, action);
        } catch (Throwable t) { // e.g. the Cleaner's thread could not start
            AgentLink.fail("registering a Cleaner", t);
        }
    }

    static long[] drainReleasedContexts() {
        return RELEASED.drain();
    }
}
