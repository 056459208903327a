package dev.jfrctx;

import dev.jfrctx.internal.ContextData;
import dev.jfrctx.internal.EntryList;
import dev.jfrctx.internal.ThreadState;
import java.util.concurrent.Callable;

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
 * <p>A {@code RecordingContext} is confined to the thread that built it. Use {@link #snapshot()} to
 * carry a context to other threads.
 */
public final class RecordingContext extends Scope implements AutoCloseable {

    /** The maximum number of entries in one context map (after extending the installed one). */
    public static final int MAX_ENTRIES = 64;

    /** The maximum length of a value, in {@code char}s. */
    public static final int MAX_VALUE_LENGTH = 1024;

    private RecordingContext(ThreadState state, ContextData data) {
        super(state, data);
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
        return new Snapshot(ThreadState.current().context());
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

    /**
     * Collects entries for a new {@link RecordingContext}. A later {@link #where} for a key replaces
     * the earlier value. A builder is not thread-safe; it may be built more than once (each
     * {@link #build()} extends the context installed at that moment).
     */
    public static final class Builder {

        private final EntryList entries = new EntryList();

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
            return this;
        }

        /**
         * Creates the context installed on the current thread extended by this builder's entries
         * (which override entries with the same key), and installs it on the current thread.
         *
         * @return the installed context; close it on this thread to restore the previous one
         * @throws IllegalArgumentException if the result would have more than
         *     {@link #MAX_ENTRIES} entries; nothing is installed then
         */
        public RecordingContext build() {
            ThreadState state = ThreadState.current();
            ContextData base = state.context();
            String[] kv = base.mergedWith(entries);
            ContextData data = base;
            if (kv != null) {
                Checks.entries(kv.length >> 1);
                data = ContextData.of(kv);
            }
            return new RecordingContext(state, data);
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
            return new Activation(ThreadState.current(), data);
        }
    }

    /**
     * One installation of a {@link Snapshot} on one thread, returned by {@link Snapshot#activate()}.
     * Confined to that thread.
     */
    public static final class Activation extends Scope implements AutoCloseable {

        private Activation(ThreadState state, ContextData data) {
            super(state, data);
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
