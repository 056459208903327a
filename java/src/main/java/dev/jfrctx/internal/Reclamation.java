package dev.jfrctx.internal;

import java.lang.ref.Cleaner;

/**
 * Tells the agent when facade objects it backs have become unreachable. <b>Not API</b>.
 *
 * <p>Context ids are released when the scope that built a private context closes
 * ({@link OwnedContexts}), or by a {@link Cleaner} action once a shared one is unreachable
 * ({@link ContextData#share}): ids numbered by {@code Definitions} go back through it (the
 * stream's next batch tells the agent), ids from {@code Natives.intern} in the {@code released}
 * argument of the next such call; either way reclaiming costs no JNI call of its own. Rings are
 * handed back with {@code Natives.release} from the Cleaner's thread. The Cleaner (and its
 * thread) is created only when the agent is live.
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
            release(id);
        }
    }

    /**
     * Releases a context id now: ids numbered by {@code Definitions} through the stream's next
     * batch, others through the next {@code Natives.intern}; no JNI call either way.
     */
    static void release(long id) {
        if (id >= AgentLink.FIRST_DEFINED_ID) {
            AgentLink.undefine(id);
        } else if (id != 0) {
            RELEASED.add(id);
        }
    }

    /**
     * Cleaner action for a ring: releases it, and the private contexts that scopes left open
     * when the thread ended. Must not reference the ThreadLog, its buffer or the thread's state.
     */
    static final class ReleaseRing implements Runnable {
        private final long handle;
        private final OwnedContexts owned;
        /** The log handed the ring back itself ({@link ThreadLog#retire}): nothing left to do. */
        private volatile boolean done;
        private Cleaner.Cleanable cleanable;

        ReleaseRing(long handle, OwnedContexts owned) {
            this.handle = handle;
            this.owned = owned;
        }

        /**
         * The holder was released another way (on the owning thread, with no scope open): the
         * Cleaner's run does nothing, and the registration is dropped now so that no GC has to
         * process its reference (one per virtual thread in a thread-per-request server).
         */
        void cancel() {
            done = true;
            Cleaner.Cleanable c = cleanable;
            if (c != null) {
                c.clean();
            }
        }

        @Override
        public void run() {
            if (!done) {
                done = true;
                AgentLink.release(handle);
                owned.releaseAll();
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
     * Releases the ring {@code handle}, and what {@code owned} still holds, once {@code log} is
     * unreachable, unless the returned action is cancelled first. If that cannot be arranged, the
     * link degrades and the ring is never released.
     */
    static ReleaseRing releaseRingWhenUnreachable(ThreadLog log, long handle, OwnedContexts owned) {
        ReleaseRing action = new ReleaseRing(handle, owned);
        action.cleanable = register(log, action);
        return action;
    }

    private static Cleaner.Cleanable register(Object watched, Runnable action) {
        try {
            return Holder.CLEANER.register(watched, action);
        } catch (Throwable t) { // e.g. the Cleaner's thread could not start
            AgentLink.fail("registering a Cleaner", t);
            return null;
        }
    }

    static long[] drainReleasedContexts() {
        return RELEASED.drain();
    }
}
