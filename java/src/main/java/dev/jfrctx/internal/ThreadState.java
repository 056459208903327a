package dev.jfrctx.internal;

/**
 * The context state of one thread: the installed context, the innermost open scope, and the
 * thread's ring writer (opened on the first install). Confined to its thread: every mutating method
 * must be called on {@link #owner()}. <b>Not API</b>.
 */
public final class ThreadState {

    private static final ThreadLocal<ThreadState> STATES = new ThreadLocal<ThreadState>() {
        @Override
        protected ThreadState initialValue() {
            return new ThreadState(Thread.currentThread());
        }
    };

    private final Thread owner;
    private ContextData current = ContextData.EMPTY;
    /** The serial number of the innermost open scope, 0 when none. */
    private long innermost;
    /** The last serial number handed out by {@link #open}; serial numbers are never reused. */
    private long serial;
    private ThreadLog log;
    private boolean logOpened;

    private ThreadState(Thread owner) {
        this.owner = owner;
    }

    /**
     * Returns the calling thread's state, creating it on first use.
     *
     * @return the state of {@link Thread#currentThread()}
     */
    public static ThreadState current() {
        return STATES.get();
    }

    /**
     * Returns the thread this state belongs to.
     *
     * @return the owner thread
     */
    public Thread owner() {
        return owner;
    }

    /**
     * Returns the installed context.
     *
     * @return the context, {@link ContextData#EMPTY} when none
     */
    public ContextData context() {
        return current;
    }

    /**
     * Returns the serial number of the innermost open scope.
     *
     * @return the number returned by the last {@link #open} not yet undone by {@link #restore},
     *     or 0 when no scope is open
     */
    public long innermost() {
        return innermost;
    }

    /**
     * Opens a scope: installs {@code data}, makes a new serial number the innermost open scope,
     * and writes exactly one transition to the thread's ring (opening the ring on the first
     * install). The caller keeps {@link #context()} and {@link #innermost()} read before this call
     * to {@link #restore} them. Identifying scopes by a never-reused number instead of by object
     * lets the scope object itself be scalar-replaced by the JIT (no allocation per switch).
     *
     * @param data the context installed from now on
     * @return the new scope's serial number, ≥ 1
     */
    public long open(ContextData data) {
        long s = serial + 1;
        serial = s;
        innermost = s;
        current = data;
        write(data.id());
        return s;
    }

    /**
     * Closes a scope: reinstalls {@code previous} with {@code outer} as the innermost open scope,
     * and writes exactly one transition.
     *
     * @param outer the serial number that was innermost when the scope was opened (0: none)
     * @param previous the context that was installed when the scope was opened
     */
    public void restore(long outer, ContextData previous) {
        innermost = outer;
        current = previous;
        write(previous.id());
    }

    private void write(long id) {
        ThreadLog l = log;
        if (l != null) {
            l.transition(id);
        } else {
            writeFirst(id);
        }
    }

    /** The first install opens the ring; without a ring (no agent), nothing is written. */
    private void writeFirst(long id) {
        if (logOpened) {
            return;
        }
        logOpened = true;
        ThreadLog l = log = ThreadLog.openForCurrentThread();
        if (l != null) {
            l.transition(id);
        }
    }

    /**
     * Returns the thread's ring writer, for tests.
     *
     * @return the log, or null when none was opened
     */
    ThreadLog log() {
        return log;
    }
}
