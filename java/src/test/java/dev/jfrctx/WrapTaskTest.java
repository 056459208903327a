package dev.jfrctx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.Test;

/** {@link RecordingContext#wrap(Runnable)} and {@link RecordingContext#wrap(Callable)}. */
public class WrapTaskTest extends ContextTestBase {

    @Test
    public void runnableCarriesTheContextCapturedAtWrapTime() throws Exception {
        AtomicReference<Map<String, String>> seen = new AtomicReference<>();
        Runnable task;
        try (RecordingContext ctx = RecordingContext.where(A, "1").build()) {
            task = RecordingContext.wrap(() -> seen.set(entries()));
        }
        // Run later, on another thread that has its own context.
        Map<String, String> after = OtherThread.call("wrap-runnable", () -> {
            try (RecordingContext own = RecordingContext.where(B, "own").build()) {
                task.run();
                return entries();
            }
        });
        assertEquals(map("a", "1"), seen.get());
        assertEquals(map("b", "own"), after);
    }

    @Test
    public void runnableRunsWithItsContextOnTheWrappingThreadToo() {
        AtomicReference<Map<String, String>> seen = new AtomicReference<>();
        Runnable task;
        try (RecordingContext ctx = RecordingContext.where(A, "1").build()) {
            task = RecordingContext.wrap(() -> seen.set(entries()));
        }
        try (RecordingContext ctx = RecordingContext.where(C, "3").build()) {
            task.run();
            assertEquals(map("c", "3"), entries());
        }
        assertEquals(map("a", "1"), seen.get());
        task.run(); // again, with nothing installed
        assertEquals(map("a", "1"), seen.get());
        assertEquals(map(), entries());
    }

    @Test
    public void runnableWrappedWithoutContextRunsWithNone() throws Exception {
        AtomicReference<Map<String, String>> seen = new AtomicReference<>();
        Runnable task = RecordingContext.wrap(() -> seen.set(entries()));
        Map<String, String> after = OtherThread.call("wrap-empty", () -> {
            try (RecordingContext own = RecordingContext.where(B, "own").build()) {
                task.run();
                return entries();
            }
        });
        assertEquals(map(), seen.get());
        assertEquals(map("b", "own"), after);
    }

    @Test
    public void runnableRestoresWhenItThrows() throws Exception {
        IllegalStateException boom = new IllegalStateException("boom");
        Runnable task;
        try (RecordingContext ctx = RecordingContext.where(A, "1").build()) {
            task = RecordingContext.wrap((Runnable) () -> {
                throw boom;
            });
        }
        Map<String, String> after = OtherThread.call("wrap-throws", () -> {
            try (RecordingContext own = RecordingContext.where(B, "own").build()) {
                try {
                    task.run();
                    fail("the task's exception must propagate");
                } catch (IllegalStateException thrown) {
                    assertSame(boom, thrown);
                }
                return entries();
            }
        });
        assertEquals(map("b", "own"), after);
    }

    @Test
    public void scopesLeftOpenByTheTaskAreDiscarded() throws Exception {
        Runnable task;
        try (RecordingContext ctx = RecordingContext.where(A, "1").build()) {
            task = RecordingContext.wrap((Runnable) () -> RecordingContext.where(C, "leak").build());
        }
        Map<String, String> after = OtherThread.call("wrap-leak", () -> {
            try (RecordingContext own = RecordingContext.where(B, "own").build()) {
                task.run();
                return entries();
            }
        });
        assertEquals(map("b", "own"), after);
    }

    @Test
    public void callableCarriesTheContextAndReturnsTheResult() throws Exception {
        Callable<Map<String, String>> task;
        try (RecordingContext ctx = RecordingContext.where(A, "1").where(B, "2").build()) {
            task = RecordingContext.wrap(ContextTestBase::entries);
        }
        List<Map<String, String>> seen = OtherThread.call("wrap-callable", () -> {
            try (RecordingContext own = RecordingContext.where(C, "own").build()) {
                Map<String, String> inside = task.call();
                return List.of(inside, entries());
            }
        });
        assertEquals(map("a", "1", "b", "2"), seen.get(0));
        assertEquals(map("c", "own"), seen.get(1));
    }

    @Test
    public void callableRestoresWhenItThrowsACheckedException() throws Exception {
        IOException boom = new IOException("boom");
        Callable<Object> task;
        try (RecordingContext ctx = RecordingContext.where(A, "1").build()) {
            task = RecordingContext.wrap(() -> {
                throw boom;
            });
        }
        try (RecordingContext own = RecordingContext.where(B, "own").build()) {
            try {
                task.call();
                fail("the task's exception must propagate");
            } catch (IOException thrown) {
                assertSame(boom, thrown);
            }
            assertEquals(map("b", "own"), entries());
        }
    }

    @Test
    public void wrappedTaskCanRunConcurrentlyOnManyThreads() throws Exception {
        Callable<Map<String, String>> task;
        try (RecordingContext ctx = RecordingContext.where(A, "shared").build()) {
            task = RecordingContext.wrap(ContextTestBase::entries);
        }
        Thread[] threads = new Thread[4];
        AtomicReference<Throwable> failure = new AtomicReference<>();
        for (int i = 0; i < threads.length; i++) {
            String own = "t" + i;
            threads[i] = new Thread(() -> {
                try (RecordingContext mine = RecordingContext.where(B, own).build()) {
                    for (int k = 0; k < 1000; k++) {
                        assertEquals(map("a", "shared"), task.call());
                        assertEquals(map("b", own), entries());
                    }
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            });
            threads[i].start();
        }
        for (Thread t : threads) {
            t.join(10_000);
        }
        if (failure.get() != null) {
            throw new AssertionError(failure.get());
        }
    }

    @Test(expected = NullPointerException.class)
    public void nullRunnableIsRejected() {
        RecordingContext.wrap((Runnable) null);
    }

    @Test(expected = NullPointerException.class)
    public void nullCallableIsRejected() {
        RecordingContext.wrap((Callable<?>) null);
    }
}
