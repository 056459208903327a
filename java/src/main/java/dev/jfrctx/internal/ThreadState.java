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

    /** {@code Thread.isVirtual()} (JDK 21+), null before. */
    private static final java.lang.invoke.MethodHandle IS_VIRTUAL = isVirtualHandle();

    private final Thread owner;
    /** The owner is a virtual thread: its ring is handed back when its outermost scope closes. */
    private final boolean virtual;
    private ContextData current = ContextData.EMPTY;
    /** The serial number of the innermost open scope, 0 when none. */
    private long innermost;
    /** The last serial number handed out by {@link #open}; serial numbers are never reused. */
    private long serial;
    private ThreadLog log;
    private boolean logOpened;
    /** Private contexts installed by open scopes; created with the ring (or first needed). */
    private OwnedContexts owned;
    /**
     * Scopes opened over a context another facade copy installed: pairs (serial, id on the
     * ring), innermost last. Null until the first such scope.
     */
    private long[] foreign;
    private int foreignTop;

    private ThreadState(Thread owner) {
        this.owner = owner;
        this.virtual = isVirtual(owner);
    }

    private static java.lang.invoke.MethodHandle isVirtualHandle() {
        try {
            return java.lang.invoke.MethodHandles.publicLookup().findVirtual(Thread.class, "isVirtual",
                    java.lang.invoke.MethodType.methodType(boolean.class));
        } catch (Throwable absent) { // JDK 17: no virtual threads
            return null;
        }
    }

    private static boolean isVirtual(Thread t) {
        if (IS_VIRTUAL == null) {
            return false;
        }
        try {
            return (boolean) IS_VIRTUAL.invokeExact(t);
        } catch (Throwable e) {
            return false;
        }
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
     * <p>When the ring holds another context than the one this state installed last, another
     * copy of the facade (another class loader) installed it on this thread: the scope remembers
     * it, so that closing restores exactly what the ring had, whichever copy wrote it.
     *
     * <p>At the end of a stack a {@link StackOverflowError} can strike at any call here: it
     * propagates, and the thread's state and ring are as they were (ownership is recorded before
     * the ring is written and undone if the write fails; the state changes after it).
     *
     * @param data the context installed from now on
     * @return the new scope's serial number, ≥ 1
     */
    public long open(ContextData data) {
        ThreadLog l = log;
        if (l == null) {
            l = openLog();
        }
        long s = serial + 1;
        boolean owns = data.isPrivate();
        if (owns) {
            own(s, data);
        }
        ContextData previous = current;
        long onRing = ThreadLog.SAME;
        if (l != null) {
            try {
                onRing = l.transition(data.id());
            } catch (Throwable t) { // a StackOverflowError: nothing was installed
                if (owns) {
                    owned.closeFrom(s); // the scope never opened: its new context is released
                }
                throw t;
            }
        }
        serial = s;
        innermost = s;
        current = data;
        if (onRing != ThreadLog.SAME && onRing != previous.id()) {
            pushForeign(s, onRing);
        }
        return s;
    }

    /**
     * Out of line (once per never-seen map): scope {@code s} built {@code data} and installs it
     * first; its id is released when {@code s} closes unless it is shared before.
     */
    private void own(long s, ContextData data) {
        OwnedContexts o = owned;
        if (o == null) {
            o = owned = new OwnedContexts();
        }
        o.push(s, data);
    }

    /**
     * Closes the scope {@code closing}: reinstalls {@code previous} with {@code outer} as the
     * innermost open scope, and writes exactly one transition: to what the ring held when that
     * scope was opened (another copy's context, if one was installed then), else to
     * {@code previous}.
     *
     * <p>The thread's state changes first, the ring is written last: a {@link StackOverflowError}
     * in the write leaves the scope closed, its context on the ring until the thread's next
     * transition (a scope left open would stay open for the thread's life).
     *
     * @param closing the serial number of the scope being closed (scopes opened after it that
     *     are still open are discarded)
     * @param outer the serial number that was innermost when the scope was opened (0: none)
     * @param previous the context that was installed when the scope was opened
     */
    public void restore(long closing, long outer, ContextData previous) {
        innermost = outer;
        current = previous;
        long id = previous.id();
        if (foreignTop > 0) {
            id = popForeign(closing, id);
        }
        OwnedContexts o = owned;
        if (o != null && o.top > 0) {
            o.closeFrom(closing);
        }
        ThreadLog l = log;
        if (l != null) {
            l.transition(id);
            if (outer == 0 && id == 0 && virtual) {
                retire(l);
            }
        }
    }

    /**
     * Out of line (once per outermost scope of a virtual thread): nothing is installed any more,
     * so the ring goes back to the agent now rather than when a GC finds the log unreachable — a
     * thread-per-request server would otherwise leave thousands of ended threads' rings for the
     * agent to visit every round. A later install registers again.
     */
    private void retire(ThreadLog l) {
        if (l.retire()) {
            log = null;
            logOpened = false;
        }
    }

    /** The first install opens the ring; without a ring (no agent), nothing is written. */
    private ThreadLog openLog() {
        if (logOpened) {
            return null;
        }
        OwnedContexts o = owned;
        if (o == null) {
            o = owned = new OwnedContexts();
        }
        // Throws only a StackOverflowError or an OutOfMemoryError: then tried again next time.
        ThreadLog l = ThreadLog.openForCurrentThread(o);
        logOpened = true;
        return log = l;
    }

    /** Remembers that scope {@code s} opened over {@code onRing}, installed by another copy. */
    private void pushForeign(long s, long onRing) {
        long[] f = foreign;
        if (f == null) {
            f = foreign = new long[8];
        } else if (foreignTop + 2 > f.length) {
            f = foreign = java.util.Arrays.copyOf(f, f.length * 2);
        }
        f[foreignTop] = s;
        f[foreignTop + 1] = onRing;
        foreignTop += 2;
    }

    /**
     * Forgets the scopes from {@code closing} on; returns the ring's context remembered for
     * {@code closing} itself, else {@code fallback}.
     */
    private long popForeign(long closing, long fallback) {
        long id = fallback;
        long[] f = foreign;
        while (foreignTop > 0 && f[foreignTop - 2] >= closing) {
            if (f[foreignTop - 2] == closing) {
                id = f[foreignTop - 1];
            }
            foreignTop -= 2;
        }
        return id;
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
