package dev.jfrctx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.Test;

public class RunWithSnapshotTest extends ContextTestBase {

    private static RecordingContext.Snapshot snapshotOf(RecordingContextKey key, String value) {
        try (RecordingContext ctx = RecordingContext.where(key, value).build()) {
            return RecordingContext.snapshot();
        }
    }

    @Test
    public void runInstallsExactlyTheSnapshotAndRestores() {
        RecordingContext.Snapshot snapshot = snapshotOf(A, "1");
        AtomicReference<Map<String, String>> seen = new AtomicReference<>();
        try (RecordingContext ctx = RecordingContext.where(B, "2").build()) {
            RecordingContext.runWithSnapshot(() -> seen.set(entries()), snapshot);
            assertEquals(map("b", "2"), entries());
        }
        assertEquals(map("a", "1"), seen.get());
    }

    @Test
    public void runRestoresWhenTheTaskThrows() {
        RecordingContext.Snapshot snapshot = snapshotOf(A, "1");
        IllegalArgumentException boom = new IllegalArgumentException("boom");
        try (RecordingContext ctx = RecordingContext.where(B, "2").build()) {
            try {
                RecordingContext.runWithSnapshot(() -> {
                    throw boom;
                }, snapshot);
                fail("the task's exception must propagate");
            } catch (IllegalArgumentException thrown) {
                assertSame(boom, thrown);
            }
            assertEquals(map("b", "2"), entries());
        }
    }

    @Test
    public void callReturnsTheResultAndRestores() throws Exception {
        RecordingContext.Snapshot snapshot = snapshotOf(A, "1");
        Map<String, String> seen = RecordingContext.callWithSnapshot(ContextTestBase::entries, snapshot);
        assertEquals(map("a", "1"), seen);
        assertEquals(map(), entries());
    }

    @Test
    public void callRestoresWhenTheTaskThrowsACheckedException() {
        RecordingContext.Snapshot snapshot = snapshotOf(A, "1");
        IOException boom = new IOException("boom");
        try (RecordingContext ctx = RecordingContext.where(B, "2").build()) {
            try {
                RecordingContext.callWithSnapshot(() -> {
                    throw boom;
                }, snapshot);
                fail("the task's exception must propagate");
            } catch (Exception thrown) {
                assertSame(boom, thrown);
            }
            assertEquals(map("b", "2"), entries());
        }
    }

    @Test
    public void scopesLeftOpenByTheTaskAreDiscarded() {
        RecordingContext.Snapshot snapshot = snapshotOf(A, "1");
        RecordingContext[] leaked = new RecordingContext[1];
        try (RecordingContext ctx = RecordingContext.where(B, "2").build()) {
            RecordingContext.runWithSnapshot(() -> leaked[0] = RecordingContext.where(C, "3").build(), snapshot);
            assertEquals(map("b", "2"), entries());
            try {
                leaked[0].close();
                fail("a discarded context must not close");
            } catch (IllegalStateException expected) {
                // expected
            }
            assertEquals(map("b", "2"), entries());
        }
    }

    @Test
    public void nestedRunsRestoreEachLevel() throws Exception {
        RecordingContext.Snapshot first = snapshotOf(A, "1");
        RecordingContext.Snapshot second = snapshotOf(B, "2");
        String inner = RecordingContext.callWithSnapshot(() -> {
            String result = RecordingContext.callWithSnapshot(() -> entries().toString(), second);
            assertEquals(map("a", "1"), entries());
            return result;
        }, first);
        assertEquals("{b=2}", inner);
    }

    @Test(expected = NullPointerException.class)
    public void runRejectsNullTask() {
        RecordingContext.runWithSnapshot(null, RecordingContext.snapshot());
    }

    @Test(expected = NullPointerException.class)
    public void runRejectsNullSnapshot() {
        RecordingContext.runWithSnapshot(() -> { }, null);
    }

    @Test(expected = NullPointerException.class)
    public void callRejectsNullTask() throws Exception {
        RecordingContext.callWithSnapshot(null, RecordingContext.snapshot());
    }

    @Test(expected = NullPointerException.class)
    public void callRejectsNullSnapshot() throws Exception {
        RecordingContext.callWithSnapshot(() -> 1, null);
    }
}
