package dev.jfrctx;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * The task wrappers behind {@link RecordingContext#wrap(Runnable)} and
 * {@link RecordingContext#wrap(Callable)}: each holds the {@link RecordingContext.Snapshot} taken
 * when it was created and installs exactly that context around every run, restoring the running
 * thread's own context afterwards, also when the task throws.
 *
 * <p>Per run this costs one {@link RecordingContext.Activation} (one small object, two ring
 * transitions with the agent loaded); creating a wrapper costs the wrapper itself plus, when no
 * snapshot is passed in, one {@link RecordingContext.Snapshot}.
 */
final class ContextPropagationTasks {

    private ContextPropagationTasks() {
    }

    /** A {@link Runnable} that runs its task with a fixed snapshot installed. */
    static final class SnapshotRunnable implements Runnable {

        private final Runnable task;
        private final RecordingContext.Snapshot snapshot;

        SnapshotRunnable(Runnable task, RecordingContext.Snapshot snapshot) {
            this.task = task;
            this.snapshot = snapshot;
        }

        @Override
        public void run() {
            RecordingContext.runWithSnapshot(task, snapshot);
        }

        @Override
        public String toString() {
            return "RecordingContext.wrap(" + task + ")";
        }
    }

    /** A {@link Callable} that calls its task with a fixed snapshot installed. */
    static final class SnapshotCallable<T> implements Callable<T> {

        private final Callable<T> task;
        private final RecordingContext.Snapshot snapshot;

        SnapshotCallable(Callable<T> task, RecordingContext.Snapshot snapshot) {
            this.task = task;
            this.snapshot = snapshot;
        }

        @Override
        public T call() throws Exception {
            return RecordingContext.callWithSnapshot(task, snapshot);
        }

        @Override
        public String toString() {
            return "RecordingContext.wrap(" + task + ")";
        }
    }

    static Runnable runnable(Runnable task, RecordingContext.Snapshot snapshot) {
        return new SnapshotRunnable(Checks.notNull(task, "task"), snapshot);
    }

    static <T> Callable<T> callable(Callable<T> task, RecordingContext.Snapshot snapshot) {
        return new SnapshotCallable<>(Checks.notNull(task, "task"), snapshot);
    }

    /**
     * Wraps every task of {@code tasks} with the one {@code snapshot} (for invokeAll/invokeAny).
     *
     * @throws NullPointerException if {@code tasks} or one of its elements is null
     */
    static <T> List<Callable<T>> callables(Collection<? extends Callable<T>> tasks,
            RecordingContext.Snapshot snapshot) {
        Checks.notNull(tasks, "tasks");
        List<Callable<T>> wrapped = new ArrayList<>(tasks.size());
        for (Callable<T> task : tasks) {
            wrapped.add(callable(task, snapshot));
        }
        return wrapped;
    }
}
