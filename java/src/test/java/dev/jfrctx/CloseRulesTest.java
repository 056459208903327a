package dev.jfrctx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.Test;

public class CloseRulesTest extends ContextTestBase {

    @Test
    public void outOfOrderCloseThrowsAndChangesNothing() {
        RecordingContext outer = RecordingContext.where(A, "1").build();
        RecordingContext inner = RecordingContext.where(B, "2").build();
        try {
            outer.close();
            fail("closing the outer context first must throw");
        } catch (IllegalStateException expected) {
            assertTrue(expected.getMessage(), expected.getMessage().contains("out of order"));
        }
        assertEquals(map("a", "1", "b", "2"), entries());
        inner.close();
        assertEquals(map("a", "1"), entries());
        outer.close();
        assertEquals(map(), entries());
    }

    @Test
    public void outOfOrderCloseOfAnActivationThrowsAndChangesNothing() {
        RecordingContext.Snapshot snapshot;
        try (RecordingContext ctx = RecordingContext.where(A, "1").build()) {
            snapshot = RecordingContext.snapshot();
        }
        RecordingContext.Activation activation = snapshot.activate();
        RecordingContext inner = RecordingContext.where(B, "2").build();
        RecordingContext.Activation nested = snapshot.activate();
        try {
            activation.close();
            fail("closing the outer activation first must throw");
        } catch (IllegalStateException expected) {
            // expected
        }
        try {
            inner.close();
            fail("closing the middle context first must throw");
        } catch (IllegalStateException expected) {
            // expected
        }
        assertEquals(map("a", "1"), entries());
        nested.close();
        assertEquals(map("a", "1", "b", "2"), entries());
        inner.close();
        assertEquals(map("a", "1"), entries());
        activation.close();
    }

    @Test
    public void closeOnAnotherThreadThrowsNamingBothAndTouchesNeitherThread() throws Exception {
        String originalName = Thread.currentThread().getName();
        Thread.currentThread().setName("builder-thread");
        try (RecordingContext ctx = RecordingContext.where(A, "1").build()) {
            Map<String, String> otherAfter = OtherThread.call("intruder-thread", () -> {
                try (RecordingContext own = RecordingContext.where(B, "own").build()) {
                    try {
                        ctx.close();
                        fail("closing on another thread must throw");
                    } catch (IllegalStateException expected) {
                        String message = expected.getMessage();
                        assertTrue(message, message.contains("builder-thread"));
                        assertTrue(message, message.contains("intruder-thread"));
                    }
                    return entries();
                }
            });
            assertEquals(map("b", "own"), otherAfter);
            assertEquals(map("a", "1"), entries());
        } finally {
            Thread.currentThread().setName(originalName);
        }
        assertEquals(map(), entries());
    }

    @Test
    public void activationClosedOnAnotherThreadThrows() throws Exception {
        RecordingContext.Snapshot snapshot = RecordingContext.snapshot();
        try (RecordingContext.Activation activation = snapshot.activate()) {
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            OtherThread.call("other", () -> {
                try {
                    activation.close();
                } catch (IllegalStateException expected) {
                    thrown.set(expected);
                }
                return null;
            });
            assertTrue(thrown.get() instanceof IllegalStateException);
        }
    }

    @Test
    public void closeTwiceIsANoOp() {
        RecordingContext outer = RecordingContext.where(A, "1").build();
        RecordingContext inner = RecordingContext.where(B, "2").build();
        inner.close();
        inner.close();
        assertEquals(map("a", "1"), entries());
        RecordingContext.Activation activation = RecordingContext.snapshot().activate();
        activation.close();
        activation.close();
        assertEquals(map("a", "1"), entries());
        outer.close();
        outer.close();
        assertEquals(map(), entries());
    }

    @Test
    public void closingAgainWhileALaterScopeIsOpenIsStillANoOp() {
        RecordingContext first = RecordingContext.where(A, "1").build();
        first.close();
        try (RecordingContext second = RecordingContext.where(B, "2").build()) {
            first.close();
            assertEquals(map("b", "2"), entries());
        }
    }

    @Test
    public void closeAfterTheThreadEndedIsRejectedOnOtherThreads() throws Exception {
        RecordingContext[] leaked = new RecordingContext[1];
        OtherThread.call("short-lived", () -> {
            leaked[0] = RecordingContext.where(A, "1").build();
            return null;
        });
        try {
            leaked[0].close();
            fail("closing on another thread must throw");
        } catch (IllegalStateException expected) {
            // expected
        }
        assertFalse(A.isBound());
    }
}
