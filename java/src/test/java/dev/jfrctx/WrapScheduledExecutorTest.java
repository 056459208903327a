package dev.jfrctx;

import static dev.jfrctx.PropagationPools.TIMEOUT_S;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import dev.jfrctx.PropagationPools.OwnContextScheduler;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/** {@link RecordingContext#wrap(ScheduledExecutorService)}. */
public class WrapScheduledExecutorTest extends ContextTestBase {

    private static final int REPEATS = 5;

    private OwnContextScheduler raw;
    private ScheduledExecutorService scheduler;

    @Before
    public void startScheduler() {
        raw = new OwnContextScheduler("sched", 2);
        scheduler = RecordingContext.wrap(raw);
    }

    @After
    public void stopScheduler() throws InterruptedException {
        PropagationPools.shutdown(raw);
    }

    @Test
    public void scheduleRunnableCarriesTheContextCapturedWhenScheduled() throws Exception {
        BlockingQueue<Map<String, String>> seen = new LinkedBlockingQueue<>();
        ScheduledFuture<?> f;
        try (RecordingContext ctx = RecordingContext.where(A, "later").build()) {
            f = scheduler.schedule(() -> {
                seen.add(entries());
            }, 30, TimeUnit.MILLISECONDS);
        }
        // The scheduling thread moves on to another context before the task runs.
        try (RecordingContext ctx = RecordingContext.where(B, "meanwhile").build()) {
            f.get(TIMEOUT_S, TimeUnit.SECONDS);
        }
        assertEquals(map("a", "later"), seen.poll());
        raw.recorder.assertRestored(1);
    }

    @Test
    public void scheduleCallableCarriesTheContextCapturedWhenScheduled() throws Exception {
        ScheduledFuture<Map<String, String>> f;
        try (RecordingContext ctx = RecordingContext.where(A, "callable").build()) {
            f = scheduler.schedule(ContextTestBase::entries, 20, TimeUnit.MILLISECONDS);
        }
        assertEquals(map("a", "callable"), f.get(TIMEOUT_S, TimeUnit.SECONDS));
        raw.recorder.assertRestored(1);
    }

    @Test
    public void everyRunAtFixedRateUsesTheSnapshotTakenWhenScheduled() throws Exception {
        repeats(true);
    }

    @Test
    public void everyRunWithFixedDelayUsesTheSnapshotTakenWhenScheduled() throws Exception {
        repeats(false);
    }

    private void repeats(boolean fixedRate) throws Exception {
        BlockingQueue<Map<String, String>> seen = new LinkedBlockingQueue<>();
        CountDownLatch done = new CountDownLatch(REPEATS);
        Runnable task = () -> {
            seen.add(entries());
            done.countDown();
        };
        ScheduledFuture<?> f;
        try (RecordingContext ctx = RecordingContext.where(A, "repeat").where(B, fixedRate ? "rate" : "delay").build()) {
            f = fixedRate
                    ? scheduler.scheduleAtFixedRate(task, 0, 5, TimeUnit.MILLISECONDS)
                    : scheduler.scheduleWithFixedDelay(task, 0, 5, TimeUnit.MILLISECONDS);
        }
        try (RecordingContext ctx = RecordingContext.where(C, "meanwhile").build()) {
            assertTrue("periodic task did not repeat", done.await(TIMEOUT_S, TimeUnit.SECONDS));
        }
        f.cancel(false);
        List<Map<String, String>> runs = new ArrayList<>();
        seen.drainTo(runs);
        assertTrue(runs.size() >= REPEATS);
        for (Map<String, String> run : runs) {
            assertEquals(map("a", "repeat", "b", fixedRate ? "rate" : "delay"), run);
        }
        raw.recorder.assertRestored(REPEATS);
    }

    @Test
    public void aPeriodicTaskThatThrowsStopsAndRestoresTheWorkersContext() throws Exception {
        CountDownLatch twice = new CountDownLatch(2);
        ScheduledFuture<?> f;
        try (RecordingContext ctx = RecordingContext.where(A, "fails").build()) {
            f = scheduler.scheduleAtFixedRate(() -> {
                twice.countDown();
                if (twice.getCount() == 0) {
                    throw new IllegalStateException("second run fails");
                }
            }, 0, 5, TimeUnit.MILLISECONDS);
        }
        try {
            f.get(TIMEOUT_S, TimeUnit.SECONDS);
            fail("the periodic task failed: get must throw");
        } catch (ExecutionException expected) {
            assertTrue(expected.getCause() instanceof IllegalStateException);
        }
        raw.recorder.assertRestored(2);
    }

    @Test
    public void submitOnAScheduledExecutorCarriesTheContext() throws Exception {
        Map<String, String> got;
        try (RecordingContext ctx = RecordingContext.where(A, "submit").build()) {
            got = scheduler.submit(ContextTestBase::entries).get(TIMEOUT_S, TimeUnit.SECONDS);
        }
        assertEquals(map("a", "submit"), got);
        // No context at scheduling time: none while running, even on a thread that has one.
        ScheduledFuture<Map<String, String>> none =
                scheduler.schedule(ContextTestBase::entries, 1, TimeUnit.MILLISECONDS);
        assertEquals(map(), none.get(TIMEOUT_S, TimeUnit.SECONDS));
        raw.recorder.assertRestored(2);
    }

    @Test
    public void lifecycleReachesTheDelegate() throws Exception {
        ScheduledFuture<?> f = scheduler.schedule(() -> { }, 1, TimeUnit.HOURS);
        assertNotNull(f);
        List<Runnable> pending = scheduler.shutdownNow();
        assertEquals(1, pending.size());
        assertTrue(raw.isShutdown());
        assertTrue(scheduler.awaitTermination(TIMEOUT_S, TimeUnit.SECONDS));
        assertTrue(raw.isTerminated());
    }
}
