package dev.jfrctx;

import static dev.jfrctx.PropagationPools.TIMEOUT_S;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import dev.jfrctx.PropagationPools.OwnContextPool;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/** CompletableFuture async stages with {@link RecordingContext#wrap(Executor)} and {@link RecordingContext#asyncExecutor}. */
public class CompletableFuturePropagationTest extends ContextTestBase {

    private OwnContextPool raw;

    @Before
    public void startPool() {
        raw = new OwnContextPool("cf", 2);
    }

    @After
    public void stopPool() throws InterruptedException {
        PropagationPools.shutdown(raw);
    }

    /** supplyAsync → thenApplyAsync → thenAcceptAsync on {@code ex}, each stage records its context. */
    private static CompletableFuture<Void> chain(Executor ex, List<Map<String, String>> seen) {
        return CompletableFuture.supplyAsync(() -> {
            seen.add(entries());
            return 1;
        }, ex).thenApplyAsync(x -> {
            seen.add(entries());
            return x + 1;
        }, ex).thenAcceptAsync(x -> {
            seen.add(entries());
            assertEquals(2, (int) x);
        }, ex);
    }

    @Test
    public void everyStageOfAWrappedChainSeesTheSubmittersContext() throws Exception {
        Executor ex = RecordingContext.wrap((Executor) raw);
        List<Map<String, String>> seen = Collections.synchronizedList(new ArrayList<>());
        CompletableFuture<Void> done;
        try (RecordingContext ctx = RecordingContext.where(A, "chain").build()) {
            done = chain(ex, seen);
        }
        done.get(TIMEOUT_S, TimeUnit.SECONDS);
        assertEquals(List.of(map("a", "chain"), map("a", "chain"), map("a", "chain")), seen);
        raw.recorder.assertRestored(3);
    }

    @Test
    public void manyConcurrentChainsKeepTheirOwnContexts() throws Exception {
        ExecutorService ex = RecordingContext.wrap(raw);
        int chains = 50;
        List<CompletableFuture<Void>> all = new ArrayList<>();
        List<List<Map<String, String>>> seen = new ArrayList<>();
        for (int i = 0; i < chains; i++) {
            List<Map<String, String>> s = Collections.synchronizedList(new ArrayList<>());
            seen.add(s);
            try (RecordingContext ctx = RecordingContext.where(A, "c" + i).build()) {
                all.add(chain(ex, s));
            }
        }
        CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0])).get(TIMEOUT_S, TimeUnit.SECONDS);
        for (int i = 0; i < chains; i++) {
            assertEquals(List.of(map("a", "c" + i), map("a", "c" + i), map("a", "c" + i)), seen.get(i));
        }
        raw.recorder.assertRestored(3 * chains);
    }

    @Test
    public void stagesAddedAfterCompletionAreSubmittedByTheCaller() throws Exception {
        Executor ex = RecordingContext.wrap((Executor) raw);
        CompletableFuture<Integer> first;
        try (RecordingContext ctx = RecordingContext.where(A, "first").build()) {
            first = CompletableFuture.supplyAsync(() -> 1, ex);
            first.get(TIMEOUT_S, TimeUnit.SECONDS);
        }
        Map<String, String> got;
        try (RecordingContext ctx = RecordingContext.where(B, "second").build()) {
            got = first.thenApplyAsync(x -> entries(), ex).get(TIMEOUT_S, TimeUnit.SECONDS);
        }
        assertEquals(map("b", "second"), got);
        raw.recorder.assertRestored(2);
    }

    @Test
    public void asyncExecutorPinsTheChainEvenWhenAForeignThreadCompletesIt() throws Exception {
        CompletableFuture<Integer> source = new CompletableFuture<>();
        List<Map<String, String>> pinned = Collections.synchronizedList(new ArrayList<>());
        List<Map<String, String>> perSubmitter = Collections.synchronizedList(new ArrayList<>());
        CompletableFuture<Void> a;
        CompletableFuture<Void> b;
        try (RecordingContext ctx = RecordingContext.where(A, "request").build()) {
            Executor bound = RecordingContext.asyncExecutor(raw);
            Executor wrapped = RecordingContext.wrap((Executor) raw);
            a = source.thenApplyAsync(x -> {
                pinned.add(entries());
                return x;
            }, bound).thenAcceptAsync(x -> pinned.add(entries()), bound);
            b = source.thenAcceptAsync(x -> perSubmitter.add(entries()), wrapped);
        }
        // Completed by a thread with another context (say, an I/O callback).
        OtherThread.call("io", () -> {
            try (RecordingContext io = RecordingContext.where(C, "io").build()) {
                source.complete(7);
            }
            return null;
        });
        a.get(TIMEOUT_S, TimeUnit.SECONDS);
        b.get(TIMEOUT_S, TimeUnit.SECONDS);
        assertEquals(List.of(map("a", "request"), map("a", "request")), pinned);
        // The documented difference: wrap() captures whoever submits the stage.
        assertEquals(List.of(map("c", "io")), perSubmitter);
        raw.recorder.assertRestored(3);
    }

    @Test
    public void asyncExecutorBoundWithNoContextRunsWithNone() throws Exception {
        Executor bound = RecordingContext.asyncExecutor(raw);
        Map<String, String> got;
        try (RecordingContext ctx = RecordingContext.where(A, "ignored").build()) {
            got = CompletableFuture.supplyAsync(ContextTestBase::entries, bound).get(TIMEOUT_S, TimeUnit.SECONDS);
        }
        assertEquals(map(), got);
        raw.recorder.assertRestored(1);
    }

    @Test
    public void wrappedCommonPoolCarriesTheContext() throws Exception {
        ExecutorService common = RecordingContext.wrap(ForkJoinPool.commonPool());
        List<Map<String, String>> seen = Collections.synchronizedList(new ArrayList<>());
        CompletableFuture<Void> done;
        try (RecordingContext ctx = RecordingContext.where(A, "common").build()) {
            done = chain(common, seen);
        }
        done.get(TIMEOUT_S, TimeUnit.SECONDS);
        assertEquals(List.of(map("a", "common"), map("a", "common"), map("a", "common")), seen);
        // Nothing leaks onto the common pool's threads afterwards.
        for (int i = 0; i < 20; i++) {
            assertEquals(map(), CompletableFuture.supplyAsync(ContextTestBase::entries)
                    .get(TIMEOUT_S, TimeUnit.SECONDS));
        }
    }

    @Test
    public void stagesWithoutAnExecutorCarryNoContext() throws Exception {
        // The documented limit: async stages without an executor run on the common pool as is.
        Map<String, String> got;
        try (RecordingContext ctx = RecordingContext.where(A, "lost").build()) {
            got = CompletableFuture.supplyAsync(ContextTestBase::entries).get(TIMEOUT_S, TimeUnit.SECONDS);
        }
        assertEquals(map(), got);
    }

    @Test
    public void aStageThatThrowsRestoresTheWorkersContext() throws Exception {
        Executor ex = RecordingContext.wrap((Executor) raw);
        CountDownLatch handled = new CountDownLatch(1);
        List<Map<String, String>> seen = Collections.synchronizedList(new ArrayList<>());
        try (RecordingContext ctx = RecordingContext.where(A, "boom").build()) {
            CompletableFuture.supplyAsync(() -> {
                throw new IllegalStateException("boom");
            }, ex).exceptionallyAsync(t -> {
                seen.add(entries());
                handled.countDown();
                return null;
            }, ex);
        }
        assertTrue(handled.await(TIMEOUT_S, TimeUnit.SECONDS));
        assertEquals(List.of(map("a", "boom")), seen);
        raw.recorder.assertRestored(2);
    }
}
