package dev.jfrctx;

import dev.jfrctx.internal.ThreadState;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ForkJoinWorkerThread;

/**
 * The run-time half of the jfrctx Java agent ({@code -javaagent:jfrctx-agent.jar}): the code the
 * advice inlined into the JDK's hand-off points calls. Loaded by the bootstrap class loader (the
 * agent appends a small jar holding the facade and this class to the bootstrap search), so that
 * {@code ThreadPoolExecutor}, {@code ForkJoinTask}, {@code Thread}, ... can reach it; it lives in
 * {@code dev.jfrctx} to use the facade's package-private {@link Scope#exitDiscardingInner()}, the
 * same restore that {@link RecordingContext#runWithSnapshot} does. <b>Not API</b>: only the agent's
 * advice calls it.
 *
 * <p>A hand-off captures the submitter's context ({@link #capture}) and the task runs inside an
 * activation of it ({@link #begin}/{@link #end}), which restores exactly the worker's own context
 * afterwards, also when the task throws or leaves scopes open. A submitter with no context
 * captures the shared {@link #EMPTY} snapshot (no allocation); a task with it on a worker with no
 * context installs nothing.
 */
public final class AutoPropagation {

    /**
     * Implemented (by the agent, when the class is loaded) by {@code FutureTask},
     * {@code ForkJoinTask} and {@code TimerTask}: a field holding the captured snapshot, null when
     * the task was never handed off, {@link #CARRIED} when the task itself carries a context
     * ({@code RecordingContext.wrap}).
     */
    public interface Carrier {
        /**
         * Returns the captured snapshot, {@link #CARRIED}, or null.
         *
         * @return the field's value
         */
        Object getJfrctx$context();

        /**
         * Sets the field.
         *
         * @param value a snapshot, {@link #CARRIED}, or null
         */
        void setJfrctx$context(Object value);
    }

    /** Marks a task that already carries its context: nothing to capture or activate. */
    public static final Object CARRIED = new Object();

    /** The empty context, captured by a submitter that has none. */
    private static volatile RecordingContext.Snapshot EMPTY;
    /** Executors whose hand-offs are not the application's (the virtual-thread scheduler). */
    private static volatile Object[] internalExecutors = new Object[0];
    /** Class-name prefixes the user excluded (tasks, executors, threads). */
    private static volatile String[] excluded = new String[0];
    private static final ClassValue<Boolean> EXCLUDED = new ClassValue<Boolean>() {
        @Override
        protected Boolean computeValue(Class<?> type) {
            String name = type.getName();
            for (String prefix : excluded) {
                if (name.startsWith(prefix)) {
                    return Boolean.TRUE;
                }
            }
            return Boolean.FALSE;
        }
    };
    private static volatile boolean threads = true;

    /** Threads started with their creator's context, until they begin to run. */
    private static final ConcurrentHashMap<Thread, RecordingContext.Snapshot> STARTING =
            new ConcurrentHashMap<>();
    /** Depth of thread-pool worker creation on this thread: its threads inherit nothing. */
    private static final ThreadLocal<int[]> POOL_WORKERS = ThreadLocal.withInitial(() -> new int[1]);
    private static final Class<?> TIMER_THREAD = classOrNull("java.util.TimerThread");

    private AutoPropagation() {
    }

    /**
     * Called once by the agent's premain, on a thread with no context.
     *
     * @param excludedPrefixes class-name prefixes whose tasks, executors and threads are left alone
     * @param threadStarts whether a started thread inherits its creator's context
     */
    public static void configure(String[] excludedPrefixes, boolean threadStarts) {
        RecordingContext.Snapshot empty = RecordingContext.snapshot();
        if (ThreadState.current().context().size() != 0) {
            throw new IllegalStateException("jfrctx: the Java agent must be configured without a context");
        }
        EMPTY = empty;
        excluded = excludedPrefixes.clone();
        threads = threadStarts;
    }

    /**
     * Executors whose hand-offs are the JDK's own (the virtual-thread scheduler): never captured.
     *
     * @param internal those executors
     */
    public static void internalExecutors(Object[] internal) {
        internalExecutors = internal.clone();
    }

    // ---- capture ----------------------------------------------------------------------------

    /**
     * The calling thread's context for a task handed to {@code executor}: {@link #EMPTY} when it
     * has none, null when nothing must be captured (excluded, or the JDK's own executor).
     */
    static RecordingContext.Snapshot capture(Object executor, Object task) {
        RecordingContext.Snapshot empty = EMPTY;
        if (empty == null) {
            return null; // not configured: the agent did not start
        }
        if (isInternal(executor) || excluded(executor) || excluded(task)) {
            return null; // left alone, also by a submitter with no context
        }
        if (ThreadState.current().context().size() == 0) {
            return empty;
        }
        return RecordingContext.snapshot();
    }

    private static boolean isInternal(Object executor) {
        for (Object e : internalExecutors) {
            if (e == executor) {
                return true;
            }
        }
        return false;
    }

    private static boolean excluded(Object o) {
        return o != null && excluded.length > 0 && EXCLUDED.get(o.getClass());
    }

    /** Whether {@code task} already carries a context of its own ({@code RecordingContext.wrap}). */
    static boolean carriesContext(Object task) {
        return task instanceof ContextPropagationTasks.SnapshotRunnable
                || task instanceof ContextPropagationTasks.SnapshotCallable
                || task instanceof PropagatingRunnable;
    }

    /**
     * {@code ThreadPoolExecutor.execute(task)}: a {@code FutureTask} (every {@code submit},
     * {@code invokeAll}, {@code invokeAny}) keeps its identity and gets the snapshot in its field;
     * any other task is wrapped when its submitter has a context, else handed over unchanged.
     *
     * @param executor the executor
     * @param task the task handed to it
     * @return the task to execute
     */
    public static Runnable execute(Object executor, Runnable task) {
        if (task == null || carriesContext(task)) {
            return task;
        }
        if (task instanceof java.util.concurrent.FutureTask) {
            captureInto(executor, task);
            return task;
        }
        RecordingContext.Snapshot s = capture(executor, task);
        if (s == null || s == EMPTY) {
            return task;
        }
        return new PropagatingRunnable(task, s);
    }

    /**
     * Stores the calling thread's context in a {@link Carrier} task handed to {@code executor}
     * (a task marked {@link #CARRIED} keeps the mark).
     *
     * @param executor the executor
     * @param task the task handed to it
     */
    public static void captureInto(Object executor, Object task) {
        if (task instanceof Carrier) {
            Carrier c = (Carrier) task;
            if (c.getJfrctx$context() != CARRIED) {
                c.setJfrctx$context(capture(executor, task));
            }
        }
    }

    /**
     * A {@code FutureTask} or {@code ForkJoinTask} adapter built around {@code task}: it carries
     * the task's own context when the task does.
     *
     * @param carrier the adapter
     * @param task the task it adapts
     */
    public static void adapted(Object carrier, Object task) {
        if (carriesContext(task) && carrier instanceof Carrier) {
            ((Carrier) carrier).setJfrctx$context(CARRIED);
        }
    }

    // ---- activation -------------------------------------------------------------------------

    /**
     * Installs the context captured in {@code carrier}, if any.
     *
     * @param carrier the task about to run
     * @return what {@link #end} needs, null when nothing was installed
     */
    public static Object begin(Object carrier) {
        if (!(carrier instanceof Carrier)) {
            return null;
        }
        Object c = ((Carrier) carrier).getJfrctx$context();
        return c instanceof RecordingContext.Snapshot ? activate((RecordingContext.Snapshot) c) : null;
    }

    /**
     * A {@code TimerTask}'s run: only on the timer's own thread.
     *
     * @param task the timer task about to run
     * @return what {@link #end} needs, null when nothing was installed
     */
    public static Object beginTimerTask(Object task) {
        return Thread.currentThread().getClass() == TIMER_THREAD ? begin(task) : null;
    }

    static Object activate(RecordingContext.Snapshot s) {
        if (s == EMPTY && ThreadState.current().context().size() == 0) {
            return null;
        }
        return s.activate();
    }

    /**
     * Restores the context {@link #begin} replaced: exactly, also over scopes the task left open.
     *
     * @param activation what {@link #begin} returned
     */
    public static void end(Object activation) {
        if (activation != null) {
            ((Scope) activation).exitDiscardingInner();
        }
    }

    // ---- class loading ----------------------------------------------------------------------

    /**
     * The agent's (bootstrap) class for a facade class name ({@code dev.jfrctx.X},
     * {@code dev.jfrctx.internal.X}), else null. Called first by every application class loader's
     * {@code loadClass}: a child-first loader (a web application's {@code WEB-INF/lib}, a plugin
     * loader) then uses the agent's copy of the facade instead of its own, so the contexts it
     * installs are the ones the agent propagates (OpenTelemetry's agent does the same for its
     * bootstrap packages).
     *
     * @param name the binary name the loader was asked for
     * @return the agent's class, or null for a name outside the facade
     */
    public static Class<?> facadeClass(String name) {
        if (name == null || !name.startsWith("dev.jfrctx.")) {
            return null;
        }
        String rest = name.substring("dev.jfrctx.".length());
        if (rest.startsWith("internal.")) {
            rest = rest.substring("internal.".length());
        }
        if (rest.indexOf('.') >= 0) {
            return null; // another package: the agent's own, the examples, the bridge
        }
        try {
            return Class.forName(name, false, null);
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    // ---- threads ----------------------------------------------------------------------------

    /**
     * {@code Thread.start}: a thread started in a context starts in that context.
     *
     * @param thread the thread being started
     */
    public static void threadStarting(Thread thread) {
        if (!threads || EMPTY == null || ThreadState.current().context().size() == 0) {
            return;
        }
        if (thread instanceof ForkJoinWorkerThread || POOL_WORKERS.get()[0] > 0
                || jdkThreadClass(thread.getClass()) || excluded(thread)) {
            return;
        }
        STARTING.putIfAbsent(thread, RecordingContext.snapshot());
    }

    /**
     * {@code Thread.start} ended: when it threw, the thread will never run.
     *
     * @param thread the thread
     * @param thrown what {@code start} threw, null when it returned
     */
    public static void threadStartFailed(Thread thread, Throwable thrown) {
        if (thrown != null && !STARTING.isEmpty()) {
            STARTING.remove(thread);
        }
    }

    /**
     * First code of a started thread ({@code Thread.run} and overrides, virtual threads' run).
     *
     * @param thread the thread whose run begins
     * @return what {@link #end} needs, null when nothing was installed
     */
    public static Object beginThread(Thread thread) {
        if (STARTING.isEmpty() || Thread.currentThread() != thread) {
            return null;
        }
        RecordingContext.Snapshot s = STARTING.remove(thread);
        return s == null ? null : s.activate();
    }

    /**
     * {@code ThreadPoolExecutor.addWorker} begins (+1) or ends (-1): its thread inherits nothing.
     *
     * @param delta +1 or -1
     */
    public static void poolWorkers(int delta) {
        POOL_WORKERS.get()[0] += delta;
    }

    /** Thread subclasses of the JDK's own (selector, cleaner, timer, carrier threads). */
    private static boolean jdkThreadClass(Class<?> type) {
        if (type == Thread.class) {
            return false;
        }
        String name = type.getName();
        return (name.startsWith("java.") || name.startsWith("jdk.") || name.startsWith("sun."))
                && !name.equals("java.lang.VirtualThread");
    }

    private static Class<?> classOrNull(String name) {
        try {
            return Class.forName(name, false, null);
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    /** The wrapper for tasks that cannot carry a field: runs {@code task} in the captured context. */
    static final class PropagatingRunnable implements Runnable {
        private final Runnable task;
        private final RecordingContext.Snapshot snapshot;

        PropagatingRunnable(Runnable task, RecordingContext.Snapshot snapshot) {
            this.task = task;
            this.snapshot = snapshot;
        }

        @Override
        public void run() {
            Object a = activate(snapshot);
            try {
                task.run();
            } finally {
                end(a);
            }
        }

        @Override
        public String toString() {
            return task.toString();
        }
    }
}
