package dev.jfrctx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import dev.jfrctx.internal.Introspection;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Pools for the propagation tests whose threads have their own context ({worker: own-N}) installed
 * for their whole life, and which record the context each thread has right before and right after
 * every task (beforeExecute/afterExecute run on the pool thread, outside the wrapper).
 */
final class PropagationPools {

    static final RecordingContextKey WORKER = RecordingContextKey.forName("worker");
    static final long TIMEOUT_S = 10;

    private PropagationPools() {
    }

    /** Threads named {@code prefix-N} running their whole life inside {worker: prefix-N}. */
    static ThreadFactory ownContextThreads(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            String name = prefix + "-" + n.getAndIncrement();
            Thread t = new Thread(() -> {
                try (RecordingContext own = RecordingContext.where(WORKER, name).build()) {
                    r.run();
                }
            }, name);
            t.setDaemon(true);
            return t;
        };
    }

    /** The worker's own context for a thread made by {@link #ownContextThreads}. */
    static Map<String, String> ownContext(Thread t) {
        return ContextTestBase.map("worker", t.getName());
    }

    /** Records the context of the pool thread right before and right after every task. */
    static final class Recorder {
        /** (thread name, context) right after each task, in completion order. */
        final BlockingQueue<Map.Entry<String, Map<String, String>>> after = new LinkedBlockingQueue<>();
        final AtomicInteger beforeMismatches = new AtomicInteger();
        final AtomicInteger mismatches = new AtomicInteger();

        void before() {
            if (!Introspection.currentEntries().equals(ownContext(Thread.currentThread()))) {
                beforeMismatches.incrementAndGet();
            }
        }

        void after() {
            Map<String, String> now = Introspection.currentEntries();
            after.add(Map.entry(Thread.currentThread().getName(), now));
            if (!now.equals(ownContext(Thread.currentThread()))) {
                mismatches.incrementAndGet();
            }
        }

        /** Waits for {@code n} task completions and checks each left the worker's own context. */
        void assertRestored(int n) throws InterruptedException {
            for (int i = 0; i < n; i++) {
                Map.Entry<String, Map<String, String>> e = after.poll(TIMEOUT_S, TimeUnit.SECONDS);
                assertNotNull("task " + i + " did not complete", e);
                assertEquals("context of " + e.getKey() + " after task " + i,
                        ContextTestBase.map("worker", e.getKey()), e.getValue());
            }
            assertEquals(0, mismatches.get());
            assertEquals(0, beforeMismatches.get());
        }
    }

    /** A fixed pool of {@code threads} whose threads have their own context. */
    static final class OwnContextPool extends ThreadPoolExecutor {
        final Recorder recorder = new Recorder();

        OwnContextPool(String prefix, int threads) {
            super(threads, threads, 0L, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(),
                    ownContextThreads(prefix));
        }

        @Override
        protected void beforeExecute(Thread t, Runnable r) {
            recorder.before();
        }

        @Override
        protected void afterExecute(Runnable r, Throwable t) {
            recorder.after();
        }
    }

    /** A scheduled pool whose threads have their own context. */
    static final class OwnContextScheduler extends ScheduledThreadPoolExecutor {
        final Recorder recorder = new Recorder();

        OwnContextScheduler(String prefix, int threads) {
            super(threads, ownContextThreads(prefix));
        }

        @Override
        protected void beforeExecute(Thread t, Runnable r) {
            recorder.before();
        }

        @Override
        protected void afterExecute(Runnable r, Throwable t) {
            recorder.after();
        }
    }

    static void shutdown(java.util.concurrent.ExecutorService pool) throws InterruptedException {
        pool.shutdownNow();
        assertTrue("pool did not terminate", pool.awaitTermination(TIMEOUT_S, TimeUnit.SECONDS));
    }

    /** Builds {key: value}, takes a snapshot, closes. */
    static RecordingContext.Snapshot snapshotOf(RecordingContextKey key, String value) {
        try (RecordingContext ctx = RecordingContext.where(key, value).build()) {
            return RecordingContext.snapshot();
        }
    }
}
