package dev.jfrctx;

import static dev.jfrctx.PropagationPools.TIMEOUT_S;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import dev.jfrctx.PropagationPools.OwnContextPool;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * {@link RecordingContext#wrap(Executor)} and {@link RecordingContext#wrap(ExecutorService)}: every
 * path carries the submitter's context, captured at submission, and leaves the pool thread's own
 * context as it found it.
 */
public class WrapExecutorServiceTest extends ContextTestBase {

    private OwnContextPool raw;
    private ExecutorService pool;
    private final BlockingQueue<Map<String, String>> seen = new LinkedBlockingQueue<>();

    @Before
    public void startPool() {
        raw = new OwnContextPool("svc", 2);
        pool = RecordingContext.wrap(raw);
    }

    @After
    public void stopPool() throws InterruptedException {
        PropagationPools.shutdown(raw);
    }

    private void record() {
        seen.add(entries());
    }

    private Map<String, String> nextSeen() throws InterruptedException {
        Map<String, String> m = seen.poll(TIMEOUT_S, TimeUnit.SECONDS);
        assertNotNull("task did not run", m);
        return m;
    }

    @Test
    public void executeCarriesTheSubmittersContext() throws Exception {
        try (RecordingContext ctx = RecordingContext.where(A, "exec").build()) {
            pool.execute(this::record);
        }
        assertEquals(map("a", "exec"), nextSeen());
        raw.recorder.assertRestored(1);
    }

    @Test
    public void everySubmitVariantCarriesTheSubmittersContext() throws Exception {
        Future<?> f1;
        Future<String> f2;
        Future<Map<String, String>> f3;
        try (RecordingContext ctx = RecordingContext.where(A, "submit").build()) {
            f1 = pool.submit(this::record);
            f2 = pool.submit(this::record, "done");
            f3 = pool.submit(ContextTestBase::entries);
        }
        assertEquals(null, f1.get(TIMEOUT_S, TimeUnit.SECONDS));
        assertEquals("done", f2.get(TIMEOUT_S, TimeUnit.SECONDS));
        assertEquals(map("a", "submit"), f3.get(TIMEOUT_S, TimeUnit.SECONDS));
        assertEquals(map("a", "submit"), nextSeen());
        assertEquals(map("a", "submit"), nextSeen());
        raw.recorder.assertRestored(3);
    }

    @Test
    public void theContextIsCapturedAtSubmissionNotAtRun() throws Exception {
        CountDownLatch gate = new CountDownLatch(1);
        // Occupy both threads so that the tasks below wait in the queue.
        List<Future<?>> blockers = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            blockers.add(raw.submit(() -> {
                gate.await();
                return null;
            }));
        }
        Future<Map<String, String>> first;
        Future<Map<String, String>> second;
        try (RecordingContext ctx = RecordingContext.where(A, "first").build()) {
            first = pool.submit(ContextTestBase::entries);
            try (RecordingContext inner = RecordingContext.where(B, "second").build()) {
                second = pool.submit(ContextTestBase::entries);
            }
        }
        gate.countDown();
        assertEquals(map("a", "first"), first.get(TIMEOUT_S, TimeUnit.SECONDS));
        assertEquals(map("a", "first", "b", "second"), second.get(TIMEOUT_S, TimeUnit.SECONDS));
        for (Future<?> b : blockers) {
            b.get(TIMEOUT_S, TimeUnit.SECONDS);
        }
        raw.recorder.assertRestored(4);
    }

    @Test
    public void invokeAllCarriesTheSubmittersContextToEveryTask() throws Exception {
        List<Callable<Map<String, String>>> tasks = Collections.nCopies(6, ContextTestBase::entries);
        List<Future<Map<String, String>>> results;
        List<Future<Map<String, String>>> timed;
        try (RecordingContext ctx = RecordingContext.where(A, "all").build()) {
            results = pool.invokeAll(tasks);
            timed = pool.invokeAll(tasks, TIMEOUT_S, TimeUnit.SECONDS);
            assertEquals("the submitter's context is untouched", map("a", "all"), entries());
        }
        assertEquals(6, results.size());
        assertEquals(6, timed.size());
        for (Future<Map<String, String>> f : results) {
            assertEquals(map("a", "all"), f.get());
        }
        for (Future<Map<String, String>> f : timed) {
            assertEquals(map("a", "all"), f.get());
        }
        raw.recorder.assertRestored(12);
    }

    @Test
    public void invokeAnyCarriesTheSubmittersContext() throws Exception {
        List<Callable<Map<String, String>>> tasks = Collections.nCopies(3, ContextTestBase::entries);
        Map<String, String> any;
        Map<String, String> timed;
        try (RecordingContext ctx = RecordingContext.where(A, "any").build()) {
            any = pool.invokeAny(tasks);
            timed = pool.invokeAny(tasks, TIMEOUT_S, TimeUnit.SECONDS);
        }
        assertEquals(map("a", "any"), any);
        assertEquals(map("a", "any"), timed);
        // invokeAny cancels the others: give the pool time to finish, then check all restored.
        awaitIdle();
        assertEquals(0, raw.recorder.mismatches.get());
    }

    @Test
    public void invokeAnyWithFailingTasksStillRestores() throws Exception {
        List<Callable<Map<String, String>>> tasks = new ArrayList<>();
        tasks.add(() -> {
            throw new IOException("first fails");
        });
        tasks.add(() -> {
            assertEquals(map("a", "any-fail"), entries());
            throw new IllegalStateException("second fails");
        });
        try (RecordingContext ctx = RecordingContext.where(A, "any-fail").build()) {
            pool.invokeAny(tasks);
            fail("all tasks failed: invokeAny must throw");
        } catch (ExecutionException expected) {
            // expected
        }
        awaitIdle();
        assertEquals(0, raw.recorder.mismatches.get());
    }

    @Test
    public void aTaskSubmittedWithNoContextRunsWithNoneOnAWorkerThatHasOne() throws Exception {
        Future<Map<String, String>> none = pool.submit(ContextTestBase::entries);
        assertEquals(map(), none.get(TIMEOUT_S, TimeUnit.SECONDS));
        // The same pool thread, unwrapped, still has its own context.
        Map<String, String> own = raw.submit(ContextTestBase::entries).get(TIMEOUT_S, TimeUnit.SECONDS);
        assertTrue("worker context " + own, own.containsKey("worker"));
        raw.recorder.assertRestored(2);
    }

    @Test
    public void theWorkersContextIsRestoredWhenTheTaskThrows() throws Exception {
        RuntimeException boom = new RuntimeException("boom");
        Future<?> runnable;
        Future<?> callable;
        try (RecordingContext ctx = RecordingContext.where(A, "throws").build()) {
            runnable = pool.submit((Runnable) () -> {
                throw boom;
            });
            callable = pool.submit(() -> {
                throw new IOException("checked");
            });
            // execute: the exception escapes the task and kills the pool thread, after
            // afterExecute has recorded its context.
            pool.execute(() -> {
                throw boom;
            });
        }
        try {
            runnable.get(TIMEOUT_S, TimeUnit.SECONDS);
            fail("must fail");
        } catch (ExecutionException e) {
            assertSame(boom, e.getCause());
        }
        try {
            callable.get(TIMEOUT_S, TimeUnit.SECONDS);
            fail("must fail");
        } catch (ExecutionException e) {
            assertTrue(e.getCause() instanceof IOException);
        }
        raw.recorder.assertRestored(3);
    }

    @Test
    public void nestedSubmissionCarriesTheInnerSubmittersContext() throws Exception {
        ExecutorService other = RecordingContext.wrap(new OwnContextPool("nested", 1));
        try {
            Future<List<Map<String, String>>> outer;
            try (RecordingContext ctx = RecordingContext.where(A, "outer").build()) {
                outer = pool.submit(() -> {
                    List<Map<String, String>> got = new ArrayList<>();
                    got.add(entries());
                    // As is: the task's context (captured from the test thread) is carried on.
                    got.add(other.submit(ContextTestBase::entries).get(TIMEOUT_S, TimeUnit.SECONDS));
                    // Extended inside the task.
                    try (RecordingContext inner = RecordingContext.where(B, "inner").build()) {
                        got.add(other.submit(ContextTestBase::entries).get(TIMEOUT_S, TimeUnit.SECONDS));
                        // Into the same pool, two levels deep.
                        got.add(pool.submit(() -> other.submit(ContextTestBase::entries)
                                .get(TIMEOUT_S, TimeUnit.SECONDS)).get(TIMEOUT_S, TimeUnit.SECONDS));
                    }
                    got.add(entries());
                    return got;
                });
            }
            List<Map<String, String>> got = outer.get(TIMEOUT_S, TimeUnit.SECONDS);
            assertEquals(map("a", "outer"), got.get(0));
            assertEquals(map("a", "outer"), got.get(1));
            assertEquals(map("a", "outer", "b", "inner"), got.get(2));
            assertEquals(map("a", "outer", "b", "inner"), got.get(3));
            assertEquals(map("a", "outer"), got.get(4));
            raw.recorder.assertRestored(2);
        } finally {
            PropagationPools.shutdown(other);
        }
    }

    @Test
    public void lifecycleMethodsReachTheDelegate() throws Exception {
        CountDownLatch gate = new CountDownLatch(1);
        pool.submit(() -> {
            gate.await();
            return null;
        });
        pool.submit(() -> {
            gate.await();
            return null;
        });
        Runnable queued = () -> { };
        pool.execute(queued);
        assertFalse(pool.isShutdown());
        assertEquals(1, raw.getQueue().size());
        List<Runnable> pending = pool.shutdownNow();
        assertTrue(raw.isShutdown());
        assertTrue(pool.isShutdown());
        assertEquals(1, pending.size());
        assertTrue(pool.awaitTermination(TIMEOUT_S, TimeUnit.SECONDS));
        assertTrue(raw.isTerminated());
        assertTrue(pool.isTerminated());
    }

    @Test
    public void shutdownReachesTheDelegate() throws Exception {
        pool.shutdown();
        assertTrue(raw.isShutdown());
        assertTrue(pool.awaitTermination(TIMEOUT_S, TimeUnit.SECONDS));
        assertTrue(raw.isTerminated());
    }

    @Test
    public void closeShutsTheDelegateDownAndWaits() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        Future<Map<String, String>> f;
        try (RecordingContext ctx = RecordingContext.where(A, "close").build()) {
            f = pool.submit(() -> {
                started.countDown();
                Thread.sleep(50);
                return entries();
            });
        }
        started.await();
        ((ContextPropagationExecutorService) pool).close();
        assertTrue(raw.isTerminated());
        assertEquals(map("a", "close"), f.get());
    }

    @Test(timeout = 10_000)
    public void closingTheWrappedCommonPoolReturnsAtOnce() {
        ContextPropagationExecutorService common =
                (ContextPropagationExecutorService) RecordingContext.wrap(ForkJoinPool.commonPool());
        common.close();
        assertFalse(ForkJoinPool.commonPool().isShutdown());
    }

    @Test
    public void wrappingIsIdempotentAndKeepsTheInterface() {
        assertSame(pool, RecordingContext.wrap(pool));
        assertSame(pool, RecordingContext.wrap((Executor) pool));
        Executor asExecutor = RecordingContext.wrap((Executor) raw);
        assertTrue(asExecutor instanceof ExecutorService);
        ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor();
        try {
            assertTrue(RecordingContext.wrap((Executor) scheduler) instanceof ScheduledExecutorService);
            assertTrue(RecordingContext.wrap((ExecutorService) scheduler) instanceof ScheduledExecutorService);
            ScheduledExecutorService wrapped = RecordingContext.wrap(scheduler);
            assertSame(wrapped, RecordingContext.wrap(wrapped));
            assertSame(wrapped, RecordingContext.wrap((ExecutorService) wrapped));
        } finally {
            scheduler.shutdownNow();
        }
    }

    @Test
    public void plainExecutorCarriesTheSubmittersContext() throws Exception {
        // An Executor that is not an ExecutorService: a new thread per task, with its own context.
        Executor perTask = r -> PropagationPools.ownContextThreads("plain").newThread(() -> {
            r.run();
            seen.add(map("after", entries().get("worker")));
        }).start();
        Executor wrapped = RecordingContext.wrap(perTask);
        assertFalse(wrapped instanceof ExecutorService);
        assertSame(wrapped, RecordingContext.wrap(wrapped));
        try (RecordingContext ctx = RecordingContext.where(A, "plain").build()) {
            wrapped.execute(this::record);
        }
        assertEquals(map("a", "plain"), nextSeen());
        assertEquals(map("after", "plain-0"), nextSeen());
    }

    @Test
    public void directExecutorLeavesTheCallersContextInPlace() {
        Executor direct = RecordingContext.wrap((Executor) Runnable::run);
        Runnable task;
        try (RecordingContext ctx = RecordingContext.where(A, "captured").build()) {
            task = RecordingContext.wrap(this::record);
        }
        try (RecordingContext ctx = RecordingContext.where(B, "caller").build()) {
            direct.execute(this::record);
            direct.execute(task);
            assertEquals(map("b", "caller"), entries());
        }
        assertEquals(map("b", "caller"), seen.poll());
        assertEquals(map("a", "captured"), seen.poll());
    }

    @Test(expected = NullPointerException.class)
    public void nullExecutorIsRejected() {
        RecordingContext.wrap((Executor) null);
    }

    @Test(expected = NullPointerException.class)
    public void nullExecutorServiceIsRejected() {
        RecordingContext.wrap((ExecutorService) null);
    }

    @Test(expected = NullPointerException.class)
    public void nullTaskIsRejected() {
        pool.submit((Runnable) null);
    }

    @Test(expected = NullPointerException.class)
    public void nullTaskInInvokeAllIsRejected() throws Exception {
        List<Callable<Object>> tasks = new ArrayList<>();
        tasks.add(null);
        pool.invokeAll(tasks);
    }

    private void awaitIdle() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_S);
        while (raw.getActiveCount() > 0 || !raw.getQueue().isEmpty()) {
            assertTrue("pool did not go idle", System.nanoTime() < deadline);
            Thread.sleep(5);
        }
    }
}
