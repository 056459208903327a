package dev.jfrctx;

import dev.jfrctx.internal.ContextData;
import dev.jfrctx.internal.ThreadState;

/**
 * One open installation of a context on one thread: a {@link RecordingContext} or an
 * {@link RecordingContext.Activation}. Scopes on a thread form a stack linked through
 * {@link #outer}; only the innermost may be closed, on its own thread.
 *
 * <p>Closing does no thread-local lookup, no JNI call, takes no lock and allocates nothing.
 */
abstract class Scope {

    private final ThreadState state;
    private final ContextData previous;
    private final Object outer;
    private boolean closed;

    /**
     * Installs {@code data} on the calling thread, whose state is {@code state}.
     */
    Scope(ThreadState state, ContextData data) {
        this.state = state;
        this.previous = state.context();
        this.outer = state.innermost();
        state.install(this, data);
    }

    /** Uninstalls this scope; see the public {@code close()} methods for the rules. */
    final void exit() {
        ThreadState st = state;
        Thread current = Thread.currentThread();
        if (current != st.owner()) {
            throw new IllegalStateException("jfrctx: " + kind() + " opened on thread "
                    + describe(st.owner()) + " cannot be closed on thread " + describe(current));
        }
        if (closed) {
            return;
        }
        if (st.innermost() != this) {
            throw new IllegalStateException("jfrctx: " + kind() + " closed out of order on thread "
                    + describe(current) + ": a RecordingContext or Activation opened after it is"
                    + " still open; close that first");
        }
        closed = true;
        st.install(outer, previous);
    }

    /**
     * Uninstalls this scope even when scopes opened after it are still open (they are discarded:
     * closing them later throws). Must be called on the owner thread while this scope is open.
     */
    final void exitDiscardingInner() {
        if (!closed) {
            closed = true;
            state.install(outer, previous);
        }
    }

    private String kind() {
        return getClass().getSimpleName();
    }

    @SuppressWarnings("deprecation") // Thread.threadId() is JDK 19+; same value
    private static String describe(Thread thread) {
        return "\"" + thread.getName() + "\" (id " + thread.getId() + ")";
    }
}
