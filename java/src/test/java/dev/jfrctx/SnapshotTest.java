package dev.jfrctx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import org.junit.Test;

public class SnapshotTest extends ContextTestBase {

    @Test
    public void snapshotOfNothingActivatesTheEmptyContext() {
        RecordingContext.Snapshot empty = RecordingContext.snapshot();
        try (RecordingContext ctx = RecordingContext.where(A, "1").build()) {
            try (RecordingContext.Activation activation = empty.activate()) {
                assertEquals(map(), entries());
                assertFalse(A.isBound());
            }
            assertEquals(map("a", "1"), entries());
        }
    }

    @Test
    public void activationReplacesOnAnotherThreadAndRestoresThatThread() throws Exception {
        RecordingContext.Snapshot snapshot;
        try (RecordingContext ctx = RecordingContext.where(A, "1").where(B, "2").build()) {
            snapshot = RecordingContext.snapshot();
        }
        Map<String, String> seen = OtherThread.call("worker", () -> {
            try (RecordingContext own = RecordingContext.where(C, "mine").build()) {
                Map<String, String> inside;
                try (RecordingContext.Activation activation = snapshot.activate()) {
                    inside = entries();
                }
                assertEquals(map("c", "mine"), entries());
                return inside;
            }
        });
        assertEquals(map("a", "1", "b", "2"), seen);
    }

    @Test
    public void oneSnapshotActiveOnTwoThreadsAtOnce() throws Exception {
        RecordingContext.Snapshot snapshot;
        try (RecordingContext ctx = RecordingContext.where(A, "shared").build()) {
            snapshot = RecordingContext.snapshot();
        }
        CyclicBarrier bothActive = new CyclicBarrier(2);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            Future<?>[] results = new Future<?>[2];
            for (int i = 0; i < 2; i++) {
                String mine = "t" + i;
                results[i] = pool.submit(() -> {
                    try (RecordingContext own = RecordingContext.where(B, mine).build()) {
                        try (RecordingContext.Activation activation = snapshot.activate()) {
                            bothActive.await(10, TimeUnit.SECONDS);
                            assertEquals(map("a", "shared"), entries());
                            try (RecordingContext inner = RecordingContext.where(C, mine).build()) {
                                assertEquals(map("a", "shared", "c", mine), entries());
                            }
                            bothActive.await(10, TimeUnit.SECONDS);
                        }
                        assertEquals(map("b", mine), entries());
                    }
                    assertEquals(map(), entries());
                    return null;
                });
            }
            for (Future<?> result : results) {
                result.get(20, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    public void activationOutlivesTheContextItWasTakenIn() throws Exception {
        CyclicBarrier activated = new CyclicBarrier(2);
        CyclicBarrier contextClosed = new CyclicBarrier(2);
        RecordingContext ctx = RecordingContext.where(A, "1").build();
        RecordingContext.Snapshot snapshot = RecordingContext.snapshot();
        FutureTask<Map<String, String>> task = new FutureTask<>(() -> {
            try (RecordingContext.Activation activation = snapshot.activate()) {
                activated.await(10, TimeUnit.SECONDS);
                contextClosed.await(10, TimeUnit.SECONDS);
                return entries();
            }
        });
        new Thread(task, "outliving").start();
        activated.await(10, TimeUnit.SECONDS);
        ctx.close();
        assertEquals(map(), entries());
        contextClosed.await(10, TimeUnit.SECONDS);
        assertEquals(map("a", "1"), task.get(10, TimeUnit.SECONDS));
        // ...and the snapshot still works here, long after its context was closed.
        try (RecordingContext.Activation again = snapshot.activate()) {
            assertEquals(map("a", "1"), entries());
        }
    }

    @Test
    public void activationNestsWithContextsOnOneThread() {
        RecordingContext.Snapshot snapshot;
        try (RecordingContext ctx = RecordingContext.where(C, "snap").build()) {
            snapshot = RecordingContext.snapshot();
        }
        try (RecordingContext outer = RecordingContext.where(A, "1").build()) {
            try (RecordingContext.Activation activation = snapshot.activate()) {
                assertEquals(map("c", "snap"), entries());
                try (RecordingContext inner = RecordingContext.where(B, "2").build()) {
                    assertEquals(map("b", "2", "c", "snap"), entries());
                    assertTrue(C.isBound());
                    assertFalse(A.isBound());
                }
                assertEquals(map("c", "snap"), entries());
            }
            assertEquals(map("a", "1"), entries());
        }
    }

    @Test
    public void oneSnapshotActivatedRepeatedlyAndNested() {
        RecordingContext.Snapshot snapshot;
        try (RecordingContext ctx = RecordingContext.where(A, "1").build()) {
            snapshot = RecordingContext.snapshot();
        }
        for (int i = 0; i < 3; i++) {
            try (RecordingContext.Activation first = snapshot.activate();
                    RecordingContext.Activation second = snapshot.activate()) {
                assertEquals(map("a", "1"), entries());
            }
            assertEquals(map(), entries());
        }
    }
}
