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
    /** The innermost open scope (a facade object, opaque here), or null. */
    private Object innermost;
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
     * Returns the innermost open scope.
     *
     * @return the scope object passed to the last {@link #install}, or null
     */
    public Object innermost() {
        return innermost;
    }

    /**
     * Installs {@code data} with {@code scope} as the innermost open scope, and writes exactly one
     * transition to the thread's ring (opening the ring on the first install).
     *
     * @param scope the new innermost scope, null for none
     * @param data the context installed from now on
     */
    public void install(Object scope, ContextData data) {
        innermost = scope;
        current = data;
        ThreadLog l = log;
        if (l == null) {
            if (logOpened) {
                return;
            }
            logOpened = true;
            l = log = ThreadLog.openForCurrentThread();
            if (l == null) {
                return;
            }
        }
        l.transition(data.id());
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
