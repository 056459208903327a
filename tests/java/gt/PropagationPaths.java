package gt;

import static gt.Propagation.*;

import dev.jfrctx.RecordingContext;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The submissions of {@link Propagation}, one per {@link Propagation.Path}: each installs
 * {gt: exec_X} (or nothing), hands work to its executor the way the path names, and waits for it.
 * The work itself stays in {@code Propagation}'s {@code gt_*} methods, whose names the test reads
 * off the samples' stacks.
 */
final class PropagationPaths {

    private PropagationPaths() {
    }

    /** Runs one submission on {@code path} with about {@code d} ns of work, and waits for it. */
    static void submit(Path path, long d, Pools p) throws Exception {
        String ctx = path.context();
        switch (path) {
            case EXECUTE: {
                CountDownLatch done = new CountDownLatch(1);
                try (RecordingContext c = RecordingContext.where(GT, ctx).build()) {
                    p.pool.execute(() -> {
                        try {
                            expect(ctx);
                            sink(gt_exec_execute(until(d)));
                            ran(path);
                        } finally {
                            done.countDown();
                        }
                    });
                }
                await(done);
                break;
            }
            case SUBMIT_RUNNABLE: {
                Future<?> f;
                try (RecordingContext c = RecordingContext.where(GT, ctx).build()) {
                    f = p.pool.submit((Runnable) () -> {
                        expect(ctx);
                        sink(gt_exec_submit_runnable(until(d)));
                        ran(path);
                    });
                }
                f.get(TIMEOUT_S, TimeUnit.SECONDS);
                break;
            }
            case SUBMIT_CALLABLE: {
                Future<Long> f;
                try (RecordingContext c = RecordingContext.where(GT, ctx).build()) {
                    f = p.pool.submit(() -> {
                        expect(ctx);
                        ran(path);
                        return gt_exec_submit_callable(until(d));
                    });
                }
                sink(f.get(TIMEOUT_S, TimeUnit.SECONDS));
                break;
            }
            case INVOKE_ALL: {
                List<Callable<Long>> tasks = new ArrayList<>();
                for (int i = 0; i < 2; i++) {
                    tasks.add(() -> {
                        expect(ctx);
                        ran(path);
                        return gt_exec_invoke_all(until(d / 2));
                    });
                }
                try (RecordingContext c = RecordingContext.where(GT, ctx).build()) {
                    for (Future<Long> f : p.pool.invokeAll(tasks, TIMEOUT_S, TimeUnit.SECONDS)) {
                        sink(f.get());
                    }
                }
                break;
            }
            case INVOKE_ANY: {
                List<Callable<Long>> tasks = new ArrayList<>();
                for (int i = 0; i < 2; i++) {
                    tasks.add(() -> {
                        expect(ctx);
                        ran(path);
                        return gt_exec_invoke_any(until(d));
                    });
                }
                try (RecordingContext c = RecordingContext.where(GT, ctx).build()) {
                    sink(p.pool.invokeAny(tasks, TIMEOUT_S, TimeUnit.SECONDS));
                }
                break;
            }
            case SCHEDULE: {
                ScheduledFuture<Long> f;
                try (RecordingContext c = RecordingContext.where(GT, ctx).build()) {
                    f = p.scheduler.schedule(() -> {
                        expect(ctx);
                        ran(path);
                        return gt_exec_schedule(until(d));
                    }, 200, TimeUnit.MICROSECONDS);
                }
                sink(f.get(TIMEOUT_S, TimeUnit.SECONDS));
                break;
            }
            case FIXED_RATE:
            case FIXED_DELAY: {
                int runs = 4;
                CountDownLatch done = new CountDownLatch(runs);
                boolean rate = path == Path.FIXED_RATE;
                Runnable task = () -> {
                    expect(ctx);
                    sink(rate ? gt_exec_fixed_rate(until(d / runs)) : gt_exec_fixed_delay(until(d / runs)));
                    ran(path);
                    done.countDown();
                };
                ScheduledFuture<?> f;
                try (RecordingContext c = RecordingContext.where(GT, ctx).build()) {
                    f = rate
                            ? p.scheduler.scheduleAtFixedRate(task, 0, 1, TimeUnit.MILLISECONDS)
                            : p.scheduler.scheduleWithFixedDelay(task, 0, 200, TimeUnit.MICROSECONDS);
                }
                await(done);
                f.cancel(false);
                break;
            }
            case CF: {
                CompletableFuture<Void> f;
                try (RecordingContext c = RecordingContext.where(GT, ctx).build()) {
                    f = CompletableFuture.supplyAsync(() -> {
                        expect(ctx);
                        return gt_exec_cf_supply(until(d));
                    }, p.pool).thenApplyAsync(x -> {
                        expect(ctx);
                        return x ^ gt_exec_cf_apply(until(d));
                    }, p.pool).thenAcceptAsync(x -> {
                        expect(ctx);
                        sink(x ^ gt_exec_cf_accept(until(d)));
                        ran(path);
                    }, p.pool);
                }
                f.get(TIMEOUT_S, TimeUnit.SECONDS);
                break;
            }
            case CF_PINNED: {
                CompletableFuture<Long> source = new CompletableFuture<>();
                CompletableFuture<Void> f;
                try (RecordingContext c = RecordingContext.where(GT, ctx).build()) {
                    Executor bound = RecordingContext.asyncExecutor(p.raw);
                    f = source.thenApplyAsync(x -> {
                        expect(ctx);
                        return x ^ gt_exec_cf_pinned(until(d / 2));
                    }, bound).thenAcceptAsync(x -> {
                        expect(ctx);
                        sink(x ^ gt_exec_cf_pinned(until(d / 2)));
                        ran(path);
                    }, bound);
                }
                // Completed by this thread in another context: the chain stays pinned.
                try (RecordingContext foreign = RecordingContext.where(GT, "foreign").build()) {
                    source.complete(d);
                }
                f.get(TIMEOUT_S, TimeUnit.SECONDS);
                break;
            }
            case COMMON: {
                Future<Long> f;
                try (RecordingContext c = RecordingContext.where(GT, ctx).build()) {
                    f = p.common.submit(() -> {
                        expect(ctx);
                        ran(path);
                        return gt_exec_common(until(d));
                    });
                }
                sink(f.get(TIMEOUT_S, TimeUnit.SECONDS));
                // The common pool's threads must have got their (empty) context back.
                sink(CompletableFuture.supplyAsync(() -> {
                    expect(null);
                    ran(Path.NONE);
                    return gt_none(until(d));
                }).get(TIMEOUT_S, TimeUnit.SECONDS));
                break;
            }
            case WRAPPED_TASK: {
                CountDownLatch done = new CountDownLatch(1);
                try (RecordingContext c = RecordingContext.where(GT, ctx).build()) {
                    p.raw.execute(p.task(() -> {
                        try {
                            expect(ctx);
                            sink(gt_exec_wrapped_task(until(d)));
                            ran(path);
                        } finally {
                            done.countDown();
                        }
                    }));
                }
                await(done);
                break;
            }
            case NONE: {
                // No context on the submitter: the task runs with none on a worker that has one.
                Future<Long> f = p.pool.submit(() -> {
                    expect(null);
                    ran(path);
                    return gt_none(until(d));
                });
                sink(f.get(TIMEOUT_S, TimeUnit.SECONDS));
                break;
            }
            case VIRTUAL: {
                if (p.virtual == null) {
                    return;
                }
                Future<Long> f;
                try (RecordingContext c = RecordingContext.where(GT, ctx).build()) {
                    f = p.virtual.submit(() -> {
                        expect(ctx);
                        ran(path);
                        return gt_exec_virtual(until(d));
                    });
                }
                sink(f.get(TIMEOUT_S, TimeUnit.SECONDS));
                break;
            }
            default:
                throw new AssertionError(path);
        }
    }

    static void await(CountDownLatch latch) throws InterruptedException {
        if (!latch.await(TIMEOUT_S, TimeUnit.SECONDS)) {
            throw new IllegalStateException("task did not finish within " + TIMEOUT_S + " s");
        }
    }
}
