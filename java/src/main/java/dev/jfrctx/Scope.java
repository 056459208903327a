package dev.jfrctx;

import dev.jfrctx.internal.ContextData;
import dev.jfrctx.internal.ThreadState;

/**
 * One open installation of a context on one thread: a {@link RecordingContext} or an
 * {@link RecordingContext.Activation}. Scopes on a thread form a stack: each has a serial number
 * unique on its thread and remembers the one that was innermost before it ({@link #outer});
 * only the innermost may be closed, on its own thread.
 *
 * <p>Closing does no thread-local lookup, no JNI call, takes no lock and allocates nothing. The
 * thread's state holds no reference to the scope, so a scope that does not escape its caller
 * (try-with-resources) is scalar-replaced by C2: opening allocates nothing either.
 */
abstract class Scope {

    private final ThreadState state;
    private final ContextData previous;
    private final long outer;
    private final long serial;
    private boolean closed;

    /**
     * Records an installation the caller has just made with {@link ThreadState#open}: the caller
     * evaluates {@code new X(st, st.context(), st.innermost(), st.open(data))}. The installing
     * is done by the public method itself, not here, and that method stays within C1's inlining
     * size (35 bytes of bytecode): it is then inlined into its callers before the JIT compiles it
     * on its own, so C2 sees the whole scope's life in the caller and scalar-replaces it.
     */
    Scope(ThreadState state, ContextData previous, long outer, long serial) {
        this.state = state;
        this.previous = previous;
        this.outer = outer;
        this.serial = serial;
    }

    /** Uninstalls this scope; see the public {@code close()} methods for the rules. */
    final void exit() {
        ThreadState st = state;
        Thread current = Thread.currentThread();
        if (current != st.owner()) {
            throw wrongThread(kind(), st.owner(), current);
        }
        if (closed) {
            return;
        }
        if (st.innermost() != serial) {
            throw outOfOrder(kind(), current);
        }
        closed = true;
        st.restore(serial, outer, previous);
    }

    /**
     * Uninstalls this scope even when scopes opened after it are still open (they are discarded:
     * closing them later throws, since their serial numbers never become innermost again). Must be
     * called on the owner thread while this scope is open.
     */
    final void exitDiscardingInner() {
        if (!closed) {
            closed = true;
            state.restore(serial, outer, previous);
        }
    }

    /** No {@code getClass()}: keeps {@code this} from escaping, so the scope can be scalar-replaced. */
    private String kind() {
        return this instanceof RecordingContext ? "RecordingContext" : "Activation";
    }

    // The failure paths are out of line: small callers inline, and the scope object never escapes.

    private static IllegalStateException wrongThread(String kind, Thread owner, Thread current) {
        return new IllegalStateException("jfrctx: " + kind + " opened on thread "
                + describe(owner) + " cannot be closed on thread " + describe(current));
    }

    private static IllegalStateException outOfOrder(String kind, Thread current) {
        return new IllegalStateException("jfrctx: " + kind + " closed out of order on thread "
                + describe(current) + ": a RecordingContext or Activation opened after it is"
                + " still open; close that first");
    }

    @SuppressWarnings("deprecation") // Thread.threadId() is JDK 19+; same value
    private static String describe(Thread thread) {
        return "\"" + thread.getName() + "\" (id " + thread.getId() + ")";
    }
}
