package dev.jfrctx;

import java.util.Collection;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The {@link ExecutorService} returned by {@link RecordingContext#wrap(ExecutorService)}: every
 * task reaching the delegate through {@code execute}, {@code submit}, {@code invokeAll} or
 * {@code invokeAny} is wrapped with the submitter's snapshot, captured on the submitting thread
 * when the method is called (one snapshot per call, shared by all tasks of an
 * {@code invokeAll}/{@code invokeAny}). Lifecycle methods go to the delegate unchanged.
 */
class ContextPropagationExecutorService extends ContextPropagationExecutor implements ExecutorService {

    private final ExecutorService service;

    ContextPropagationExecutorService(ExecutorService delegate) {
        super(delegate, null);
        this.service = delegate;
    }

    @Override
    public <T> Future<T> submit(Callable<T> task) {
        return service.submit(ContextPropagationTasks.callable(task, snapshotForSubmission()));
    }

    @Override
    public <T> Future<T> submit(Runnable task, T result) {
        return service.submit(ContextPropagationTasks.runnable(task, snapshotForSubmission()), result);
    }

    @Override
    public Future<?> submit(Runnable task) {
        return service.submit(ContextPropagationTasks.runnable(task, snapshotForSubmission()));
    }

    @Override
    public <T> List<Future<T>> invokeAll(Collection<? extends Callable<T>> tasks)
            throws InterruptedException {
        return service.invokeAll(ContextPropagationTasks.callables(tasks, snapshotForSubmission()));
    }

    @Override
    public <T> List<Future<T>> invokeAll(Collection<? extends Callable<T>> tasks, long timeout,
            TimeUnit unit) throws InterruptedException {
        return service.invokeAll(ContextPropagationTasks.callables(tasks, snapshotForSubmission()),
                timeout, unit);
    }

    @Override
    public <T> T invokeAny(Collection<? extends Callable<T>> tasks)
            throws InterruptedException, ExecutionException {
        return service.invokeAny(ContextPropagationTasks.callables(tasks, snapshotForSubmission()));
    }

    @Override
    public <T> T invokeAny(Collection<? extends Callable<T>> tasks, long timeout, TimeUnit unit)
            throws InterruptedException, ExecutionException, TimeoutException {
        return service.invokeAny(ContextPropagationTasks.callables(tasks, snapshotForSubmission()),
                timeout, unit);
    }

    // ---- lifecycle: unchanged -------------------------------------------------------------

    @Override
    public void shutdown() {
        service.shutdown();
    }

    @Override
    public List<Runnable> shutdownNow() {
        return service.shutdownNow();
    }

    @Override
    public boolean isShutdown() {
        return service.isShutdown();
    }

    @Override
    public boolean isTerminated() {
        return service.isTerminated();
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
        return service.awaitTermination(timeout, unit);
    }

    /**
     * Closes the delegate with its own {@code close()} (on JDK 19+ {@code ExecutorService} is
     * {@link AutoCloseable} and this method overrides its default, so that for example closing a
     * wrapped {@code ForkJoinPool.commonPool()} stays the no-op it is on the pool itself, instead of
     * waiting forever for a pool that never terminates). On a JDK where the delegate has no
     * {@code close()} (before 19, where only a direct call reaches this method), does what JDK 19
     * does: nothing for the common pool, otherwise shuts the delegate down and waits for its
     * termination.
     */
    public void close() {
        if (service instanceof AutoCloseable) {
            try {
                ((AutoCloseable) service).close();
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Exception e) {
                // ExecutorService.close() declares no checked exception; a delegate that throws
                // one anyway (an unusual AutoCloseable implementation) surfaces unchecked.
                throw new IllegalStateException("jfrctx: closing " + service + " failed", e);
            }
            return;
        }
        if (service == ForkJoinPool.commonPool()) {
            return;
        }
        boolean terminated = service.isTerminated();
        if (!terminated) {
            service.shutdown();
            boolean interrupted = false;
            while (!terminated) {
                try {
                    terminated = service.awaitTermination(1L, TimeUnit.DAYS);
                } catch (InterruptedException e) {
                    if (!interrupted) {
                        service.shutdownNow();
                        interrupted = true;
                    }
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
