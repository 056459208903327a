package dev.jfrctx;

import java.util.concurrent.Callable;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The {@link ScheduledExecutorService} returned by
 * {@link RecordingContext#wrap(ScheduledExecutorService)}: on top of the {@code ExecutorService}
 * paths, {@code schedule}, {@code scheduleAtFixedRate} and {@code scheduleWithFixedDelay} wrap
 * their task with the snapshot captured on the scheduling thread at the call; every run of a
 * periodic task uses that same snapshot.
 */
final class ContextPropagationScheduledExecutorService extends ContextPropagationExecutorService
        implements ScheduledExecutorService {

    private final ScheduledExecutorService scheduler;

    ContextPropagationScheduledExecutorService(ScheduledExecutorService delegate) {
        super(delegate);
        this.scheduler = delegate;
    }

    @Override
    public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
        return scheduler.schedule(ContextPropagationTasks.runnable(command, snapshotForSubmission()),
                delay, unit);
    }

    @Override
    public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
        return scheduler.schedule(ContextPropagationTasks.callable(callable, snapshotForSubmission()),
                delay, unit);
    }

    @Override
    public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period,
            TimeUnit unit) {
        return scheduler.scheduleAtFixedRate(
                ContextPropagationTasks.runnable(command, snapshotForSubmission()),
                initialDelay, period, unit);
    }

    @Override
    public ScheduledFuture<?> scheduleWithFixedDelay(Runnable command, long initialDelay, long delay,
            TimeUnit unit) {
        return scheduler.scheduleWithFixedDelay(
                ContextPropagationTasks.runnable(command, snapshotForSubmission()),
                initialDelay, delay, unit);
    }
}
