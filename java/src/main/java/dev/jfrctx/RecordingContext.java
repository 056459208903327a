package dev.jfrctx;

import dev.jfrctx.internal.ContextCache;
import dev.jfrctx.internal.ContextData;
import dev.jfrctx.internal.EntryList;
import dev.jfrctx.internal.ThreadState;
import java.util.concurrent.Callable;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;

/**
 * An immutable map of {@link RecordingContextKey} → {@code String} installed on one thread, so that
 * the JFR samples taken on that thread while it is installed carry its entries.
 *
 * <pre>{@code
 * try (RecordingContext ctx = RecordingContext.where(ENDPOINT, "/orders").where(REQUEST, id).build()) {
 *     handle();                                       // samples on this thread carry both entries
 *     RecordingContext.Snapshot s = RecordingContext.snapshot();
 *     pool.submit(() -> RecordingContext.runWithSnapshot(this::work, s)); // ...and on that task
 * }
 * }</pre>
 *
 * <h2>The installed context and its stack</h2>
 * Each thread has one <em>installed context</em>, initially empty. {@link Builder#build()} installs
 * a new context that extends the installed one, and {@link Snapshot#activate()} installs a
 * captured one in its place. Each of them returns a scope ({@code RecordingContext} or
 * {@link Activation}) whose {@code close()} restores exactly the context that was installed before
 * it. Scopes on a thread form a stack and must be closed on that thread, innermost first
 * (try-with-resources does both):
 * <ul>
 * <li>closing a scope on another thread than the one that opened it throws
 *     {@link IllegalStateException} and changes nothing;</li>
 * <li>closing a scope while a scope opened after it on the same thread is still open throws
 *     {@link IllegalStateException} and changes nothing: the stack stays intact and closing in the
 *     correct order still works afterwards;</li>
 * <li>closing a scope again (on its thread) is a no-op.</li>
 * </ul>
 *
 * <h2>Limits</h2>
 * A context map has at most {@link #MAX_ENTRIES} entries; values are non-empty and at most
 * {@link #MAX_VALUE_LENGTH} chars; key names at most {@link RecordingContextKey#MAX_NAME_LENGTH}.
 *
 * <h2>No read-back</h2>
 * There is deliberately no way to read values back: a recording context describes what a thread is
 * doing for the recording; it is not a general-purpose carrier of data.
 * {@link RecordingContextKey#isBound()} only tells whether a key is present.
 *
 * <h2>Without the agent</h2>
 * When the jfrctx agent is not loaded, nothing is recorded, but every method keeps the semantics
 * above (including validation and the stack rules), at little cost.
 *
 * <h2>Carrying context to other threads</h2>
 * A {@code RecordingContext} is confined to the thread that built it. Use {@link #snapshot()} to
 * carry a context to other threads, or let the propagation helpers do it:
 * {@link #wrap(Runnable)} and {@link #wrap(Callable)} bind a task to the context installed when
 * they are called; {@link #wrap(Executor)}, {@link #wrap(ExecutorService)} and
 * {@link #wrap(ScheduledExecutorService)} return executors whose tasks run with the context of the
 * thread that submitted them; {@link #asyncExecutor(Executor)} returns an executor bound to the
 * context installed when it was created, for {@code CompletableFuture} chains. In every case the
 * task runs with exactly the captured context, and the thread running it gets its own context back
 * when the task returns or throws.
 */
public final class RecordingContext extends Scope implements AutoCloseable {

    /** The maximum number of entries in one context map (after extending the installed one). */
    public static final int MAX_ENTRIES = 64;

    /** The maximum length of a value, in {@code char}s. */
    public static final int MAX_VALUE_LENGTH = 1024;

    private RecordingContext(ThreadState state, ContextData previous, long outer, long serial) {
        super(state, previous, outer, serial);
    }

    /**
     * Starts a builder with one entry; add more with {@link Builder#where}, then {@link Builder#build()}.
     *
     * @param key the key
     * @param value the value: non-empty, at most {@link #MAX_VALUE_LENGTH} chars
     * @return a new builder
     * @throws NullPointerException if {@code key} or {@code value} is null
     * @throws IllegalArgumentException if {@code value} is empty or too long
     */
    public static Builder where(RecordingContextKey key, String value) {
        return new Builder().where(key, value);
    }

    /**
     * Uninstalls this context from its thread, restoring exactly the context that was installed
     * before {@link Builder#build()} installed it. Closing again is a no-op.
     *
     * @throws IllegalStateException if called on another thread than the one that built this
     *     context, or while a context or activation opened after it on that thread is still open;
     *     nothing changes in either case
     */
    @Override
    public void close() {
        exit();
    }

    /**
     * Captures the context installed on the current thread (possibly the empty one).
     *
     * @return a snapshot usable on any thread, any number of times
     */
    public static Snapshot snapshot() {
        ContextData data = ThreadState.current().context();
        data.share(); // installed here, so not released: succeeds
        return new Snapshot(data);
    }

    /**
     * Runs {@code task} on the current thread with exactly the snapshot's context installed, then
     * restores the previous context, also when {@code task} throws. Contexts or activations that
     * {@code task} leaves open are discarded when it returns (closing them later throws
     * {@link IllegalStateException}).
     *
     * @param task the task
     * @param snapshot the context to install
     * @throws NullPointerException if an argument is null
     */
    public static void runWithSnapshot(Runnable task, Snapshot snapshot) {
        Checks.notNull(task, "task");
        Activation activation = Checks.notNull(snapshot, "snapshot").activate();
        try {
            task.run();
        } finally {
            activation.exitDiscardingInner();
        }
    }

    /**
     * Calls {@code task} on the current thread with exactly the snapshot's context installed, then
     * restores the previous context, also when {@code task} throws. Contexts or activations that
     * {@code task} leaves open are discarded when it returns (closing them later throws
     * {@link IllegalStateException}).
     *
     * @param <T> the result type
     * @param task the task
     * @param snapshot the context to install
     * @return the task's result
     * @throws Exception what {@code task} throws
     * @throws NullPointerException if an argument is null
     */
    public static <T> T callWithSnapshot(Callable<T> task, Snapshot snapshot) throws Exception {
        Checks.notNull(task, "task");
        Activation activation = Checks.notNull(snapshot, "snapshot").activate();
        try {
            return task.call();
        } finally {
            activation.exitDiscardingInner();
        }
    }

    // ---- propagation helpers ----------------------------------------------------------------

    /**
     * Returns a task that runs {@code task} with the context installed on the calling thread
     * <em>now</em> (captured once, by this call), on whatever thread runs it, any number of times.
     * Each run behaves like {@link #runWithSnapshot}: exactly the captured context is installed
     * (also when it is empty: a task wrapped with no context runs with none), and the running
     * thread's own context is restored when the task returns or throws.
     *
     * <pre>{@code
     * try (RecordingContext ctx = RecordingContext.where(ENDPOINT, "/orders").build()) {
     *     new Thread(RecordingContext.wrap(this::work)).start();   // work() runs in {endpoint: /orders}
     * }
     * }</pre>
     *
     * <p>As with {@code ExecutorService.submit}, a lambda or method reference that returns a value
     * selects {@link #wrap(Callable)}; cast it ({@code wrap((Runnable) () -> cache.put(k, v))}) to
     * get a {@code Runnable}.
     *
     * @param task the task
     * @return the wrapped task
     * @throws NullPointerException if {@code task} is null
     */
    public static Runnable wrap(Runnable task) {
        return ContextPropagationTasks.runnable(task, snapshot());
    }

    /**
     * Returns a task that calls {@code task} with the context installed on the calling thread
     * <em>now</em> (captured once, by this call); see {@link #wrap(Runnable)}. Each call behaves
     * like {@link #callWithSnapshot}.
     *
     * @param <T> the result type
     * @param task the task
     * @return the wrapped task
     * @throws NullPointerException if {@code task} is null
     */
    public static <T> Callable<T> wrap(Callable<T> task) {
        return ContextPropagationTasks.callable(task, snapshot());
    }

    /**
     * Returns an executor that runs every task with the context its <em>submitter</em> had
     * installed when it called {@code execute} (captured on the submitting thread at that moment),
     * then restores the running thread's own context, also when the task throws. A task submitted
     * with no context runs with none, even on a thread that has one installed.
     *
     * <p>When {@code executor} is an {@link ExecutorService} (or a
     * {@link ScheduledExecutorService}), the result is {@link #wrap(ExecutorService)} (or
     * {@link #wrap(ScheduledExecutorService)}) of it, so it can be cast back to that interface.
     * Wrapping an executor returned by a {@code wrap} method returns it unchanged.
     *
     * <p><b>{@code CompletableFuture}.</b> The result can be passed as the executor of async stages:
     * <pre>{@code
     * Executor ex = RecordingContext.wrap(pool);
     * CompletableFuture.supplyAsync(this::load, ex)       // submitted by this thread: its context
     *         .thenApplyAsync(this::render, ex)           // submitted when load() completes: same
     *         .thenAcceptAsync(this::send, ex);
     * }</pre>
     * An async stage is submitted by the thread that completes the stage before it (or, when that
     * one is already complete, by the thread that adds the stage), so in a chain that only uses
     * wrapped executors every stage inherits the context of the first submitter. When a stage is
     * completed by foreign code (for example {@code future.complete(x)} on an I/O thread), the next
     * async stage gets that thread's context; use {@link #asyncExecutor(Executor)} to pin a chain to
     * one context regardless. Stages without an explicit executor ({@code supplyAsync(s)},
     * {@code thenApplyAsync(f)}) run on {@link java.util.concurrent.ForkJoinPool#commonPool()} and
     * carry no context: pass {@code RecordingContext.wrap(ForkJoinPool.commonPool())} to keep the
     * common pool and carry the context. Non-async stages ({@code thenApply(f)}) run on the thread
     * that completes the previous stage, with whatever context that thread has installed (a wrapped
     * task's context while it runs). Tasks forked inside a task ({@code ForkJoinTask.fork()}) are
     * not wrapped.
     *
     * @param executor the executor to delegate to
     * @return the wrapping executor
     * @throws NullPointerException if {@code executor} is null
     */
    public static Executor wrap(Executor executor) {
        Checks.notNull(executor, "executor");
        if (executor instanceof ScheduledExecutorService) {
            return wrap((ScheduledExecutorService) executor);
        }
        if (executor instanceof ExecutorService) {
            return wrap((ExecutorService) executor);
        }
        if (executor instanceof ContextPropagationExecutor
                && ((ContextPropagationExecutor) executor).capturesAtSubmission()) {
            return executor;
        }
        return new ContextPropagationExecutor(executor, null);
    }

    /**
     * Returns an executor service whose every task runs with the context its <em>submitter</em>
     * had installed when it submitted it: {@code execute}, all {@code submit} variants,
     * {@code invokeAll} and {@code invokeAny} capture the calling thread's context at the call
     * (one capture per call, shared by the tasks of an {@code invokeAll}/{@code invokeAny}) and
     * install exactly that context around each task, restoring the pool thread's own context
     * afterwards, also when the task throws. Lifecycle methods ({@code shutdown},
     * {@code shutdownNow}, {@code isShutdown}, {@code isTerminated}, {@code awaitTermination}, and
     * {@code close} on JDK 19+) go to {@code executor} unchanged; the {@code Future}s are the
     * delegate's. {@code shutdownNow} returns the delegate's queued tasks, which are the wrapped
     * ones.
     *
     * <pre>{@code
     * ExecutorService pool = RecordingContext.wrap(Executors.newFixedThreadPool(8));
     * try (RecordingContext ctx = RecordingContext.where(ENDPOINT, "/orders").build()) {
     *     pool.submit(this::work);                            // work() runs in {endpoint: /orders}
     * }
     * }</pre>
     *
     * <p>Wrapping {@code ForkJoinPool.commonPool()} gives an executor for {@code CompletableFuture}
     * async stages that keeps the common pool; see {@link #wrap(Executor)}. Wrapping an executor
     * service returned by a {@code wrap} method returns it unchanged.
     *
     * @param executor the executor service to delegate to
     * @return the wrapping executor service
     * @throws NullPointerException if {@code executor} is null
     */
    public static ExecutorService wrap(ExecutorService executor) {
        Checks.notNull(executor, "executor");
        if (executor instanceof ScheduledExecutorService) {
            return wrap((ScheduledExecutorService) executor);
        }
        if (executor instanceof ContextPropagationExecutorService) {
            return executor;
        }
        return new ContextPropagationExecutorService(executor);
    }

    /**
     * Returns a scheduled executor service that carries the submitter's context like
     * {@link #wrap(ExecutorService)} and also through {@code schedule} (Runnable and Callable),
     * {@code scheduleAtFixedRate} and {@code scheduleWithFixedDelay}: the context is captured on
     * the scheduling thread when the method is called, and every run of the task, including each
     * repetition of a periodic one, is installed with exactly that context. Wrapping a scheduled
     * executor service returned by this method returns it unchanged.
     *
     * @param executor the scheduled executor service to delegate to
     * @return the wrapping scheduled executor service
     * @throws NullPointerException if {@code executor} is null
     */
    public static ScheduledExecutorService wrap(ScheduledExecutorService executor) {
        Checks.notNull(executor, "executor");
        if (executor instanceof ContextPropagationScheduledExecutorService) {
            return executor;
        }
        return new ContextPropagationScheduledExecutorService(executor);
    }

    /**
     * Returns an executor bound to the context installed on the calling thread <em>now</em>
     * (captured once, by this call): every task it runs, whoever submits it, runs with exactly
     * that context, and the running thread's own context is restored afterwards. Made for
     * {@code CompletableFuture} chains whose stages may be triggered by threads with other
     * contexts (or none):
     *
     * <pre>{@code
     * try (RecordingContext ctx = RecordingContext.where(REQUEST, id).build()) {
     *     Executor ex = RecordingContext.asyncExecutor(pool);      // pinned to {request: id}
     *     return client.fetchAsync(url)                          // completed by an I/O thread
     *             .thenApplyAsync(this::parse, ex)                // still runs in {request: id}
     *             .thenAcceptAsync(this::store, ex);
     * }
     * }</pre>
     *
     * Create one per unit of work (it is one small object); see {@link #wrap(Executor)} for the
     * variant that captures the context of each submitter instead.
     *
     * @param executor the executor to delegate to
     * @return an executor running every task with the context installed now
     * @throws NullPointerException if {@code executor} is null
     */
    public static Executor asyncExecutor(Executor executor) {
        return new ContextPropagationExecutor(Checks.notNull(executor, "executor"), snapshot());
    }

    /**
     * Collects entries for a new {@link RecordingContext}. A later {@link #where} for a key replaces
     * the earlier value. A builder is not thread-safe; it may be built more than once (each
     * {@link #build()} extends the context installed at that moment).
     */
    public static final class Builder {

        private final EntryList entries = new EntryList();
        /**
         * The cache entry of the last {@link #build()}, null after a {@link #where}. Immutable, so
         * a builder shared by threads (only built, never changed) still reads a consistent one;
         * it holds the contexts weakly, like the shared cache.
         */
        private ContextCache.Entry last;

        private Builder() {
        }

        /**
         * Adds an entry, replacing an earlier entry of this builder with the same key.
         *
         * @param key the key
         * @param value the value: non-empty, at most {@link #MAX_VALUE_LENGTH} chars
         * @return this builder
         * @throws NullPointerException if {@code key} or {@code value} is null
         * @throws IllegalArgumentException if {@code value} is empty or too long, or this builder
         *     would hold more than {@link #MAX_ENTRIES} keys
         */
        public Builder where(RecordingContextKey key, String value) {
            String name = Checks.key(key).name();
            Checks.value(key, value);
            if (!entries.containsKey(name)) {
                Checks.entries(entries.size() + 1);
            }
            entries.put(name, value);
            last = null;
            return this;
        }

        /**
         * Creates the context installed on the current thread extended by this builder's entries
         * (which override entries with the same key), and installs it on the current thread.
         * Building a map that was built recently (on the same installed context, by this or
         * another builder with the same entries) reuses the agent's id for it from a bounded
         * cache: no call into the agent and, when the result does not escape the caller
         * (try-with-resources), no allocation.
         *
         * @return the installed context; close it on this thread to restore the previous one
         * @throws IllegalArgumentException if the result would have more than
         *     {@link #MAX_ENTRIES} entries; nothing is installed then
         */
        public RecordingContext build() {
            // Kept within 35 bytes of bytecode (see Scope's constructor).
            ThreadState st = ThreadState.current();
            ContextData data = resolve(st.context());
            return new RecordingContext(st, st.context(), st.innermost(), st.open(data));
        }

        /**
         * The context this builder builds on {@code base}: the last one when it is shared, else
         * {@link #lookup}.
         */
        private ContextData resolve(ContextData base) {
            ContextCache.Entry e = last;
            ContextData data;
            if (e != null && e.extendsBase(base) && (data = e.result()) != null && data.isShared()) {
                return data;
            }
            return lookup(base);
        }

        /**
         * The last result or the shared cache's, shared from now on (it is used again); else
         * merges and numbers (no JNI call) a new map. A map met the first time is private to
         * this build's scope (released when it closes) and kept by this builder only; one met
         * before (its entry found, or its miss remembered at the cache's door) recurs: shared
         * from the start and cached. Out of line: the common case above stays small.
         */
        private ContextData lookup(ContextData base) {
            ContextCache.Entry e = last;
            if (e == null || !e.extendsBase(base) || e.refersTo(null)) {
                e = ContextCache.get(base, entries);
            }
            ContextData data = e == null ? null : e.result();
            if (data == null || !data.share()) {
                boolean recurs = e != null || ContextCache.admit(base, entries);
                String[] kv = base.mergedWith(entries);
                data = base;
                if (kv != null) {
                    Checks.entries(kv.length >> 1);
                    data = ContextData.of(kv, recurs);
                } else {
                    base.share(); // installed again by this build: no longer one scope's own
                }
                e = recurs ? ContextCache.put(base, entries, data) : ContextCache.own(base, data);
            }
            last = e;
            return data;
        }
    }

    /**
     * A captured context. Immutable and thread-safe: it can be activated on any thread, any number
     * of times, also concurrently, and also after the context it was taken in has been closed.
     */
    public static final class Snapshot {

        private final ContextData data;

        private Snapshot(ContextData data) {
            this.data = data;
        }

        /**
         * Installs exactly this snapshot's context on the current thread, replacing (not
         * extending) the installed one, until the returned activation is closed.
         *
         * @return the activation; close it on this thread to restore the previous context
         */
        public Activation activate() {
            // Kept within 35 bytes of bytecode (see Scope's constructor).
            ThreadState st = ThreadState.current();
            return new Activation(st, st.context(), st.innermost(), st.open(data));
        }
    }

    /**
     * One installation of a {@link Snapshot} on one thread, returned by {@link Snapshot#activate()}.
     * Confined to that thread.
     */
    public static final class Activation extends Scope implements AutoCloseable {

        private Activation(ThreadState state, ContextData previous, long outer, long serial) {
            super(state, previous, outer, serial);
        }

        /**
         * Restores exactly the context that was installed before {@link Snapshot#activate()}.
         * Closing again is a no-op.
         *
         * @throws IllegalStateException if called on another thread than the one that activated
         *     it, or while a context or activation opened after it on that thread is still open;
         *     nothing changes in either case
         */
        @Override
        public void close() {
            exit();
        }
    }
}
