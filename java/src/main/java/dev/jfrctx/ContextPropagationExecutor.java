package dev.jfrctx;

import java.util.concurrent.Executor;

/**
 * An {@link Executor} that hands every task to its delegate wrapped so that it runs with a
 * recording context snapshot: the one captured on the submitting thread at {@link #execute} time
 * ({@link RecordingContext#wrap(Executor)}), or a snapshot bound once when this executor was created
 * ({@link RecordingContext#asyncExecutor(Executor)}).
 */
class ContextPropagationExecutor implements Executor {

    final Executor delegate;
    /** The snapshot every task runs with, or null to capture the submitter's at submission. */
    private final RecordingContext.Snapshot bound;

    ContextPropagationExecutor(Executor delegate, RecordingContext.Snapshot bound) {
        this.delegate = Checks.notNull(delegate, "executor");
        this.bound = bound;
    }

    /** Whether this executor captures the submitter's context at submission. */
    final boolean capturesAtSubmission() {
        return bound == null;
    }

    /** The snapshot for a task submitted now by the calling thread. */
    final RecordingContext.Snapshot snapshotForSubmission() {
        RecordingContext.Snapshot b = bound;
        return b != null ? b : RecordingContext.snapshot();
    }

    @Override
    public void execute(Runnable command) {
        delegate.execute(ContextPropagationTasks.runnable(command, snapshotForSubmission()));
    }

    @Override
    public String toString() {
        return (bound == null ? "RecordingContext.wrap(" : "RecordingContext.asyncExecutor(")
                + delegate + ")";
    }
}
