package dev.jfrctx.internal;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.Test;

/** Drives the producer against a ring built here, read back with plain native-order reads. */
public class ThreadLogTest {

    private static ByteBuffer ring(long capacity, long handle) {
        ByteBuffer ring = ByteBuffer.allocateDirect(64 + 16 * (int) capacity).order(ByteOrder.nativeOrder());
        ring.putLong(ThreadLog.CAPACITY, capacity);
        ring.putLong(ThreadLog.THREAD_ID, 1);
        ring.putLong(ThreadLog.HANDLE, handle);
        return ring;
    }

    private static long time(ByteBuffer ring, int slot) {
        return ring.getLong(ThreadLog.ENTRIES + 16 * slot);
    }

    private static long context(ByteBuffer ring, int slot) {
        return ring.getLong(ThreadLog.ENTRIES + 16 * slot + 8);
    }

    @Test
    public void transitionsFillSlotsAndPublishHead() {
        ByteBuffer ring = ring(8, 77);
        ThreadLog log = new ThreadLog(ring);
        assertEquals(77, log.handle());
        long before = System.nanoTime();
        assertEquals("a new ring holds no context", 0, log.transition(5));
        assertEquals(ThreadLog.SAME, log.transition(0));
        assertEquals(ThreadLog.SAME, log.transition(9));
        long after = System.nanoTime();
        assertEquals(6, ring.getLong(ThreadLog.HEAD));
        assertEquals("the claim word is not written by transitions", 0, ring.getLong(ThreadLog.CLAIM));
        assertEquals(0, ring.getLong(ThreadLog.TAIL));
        assertEquals(3, log.transitions());
        assertEquals(5, context(ring, 0));
        assertEquals(0, context(ring, 1));
        assertEquals(9, context(ring, 2));
        assertTrue(before <= time(ring, 0));
        assertTrue(time(ring, 0) <= time(ring, 1));
        assertTrue(time(ring, 1) <= time(ring, 2));
        assertTrue(time(ring, 2) <= after);
        assertEquals(0, time(ring, 3));
        assertEquals("header fields the producer does not own stay untouched", 8, ring.getLong(ThreadLog.CAPACITY));
    }

    @Test
    public void wrapsAroundOverwritingTheOldestSlots() {
        ByteBuffer ring = ring(4, 1);
        ThreadLog log = new ThreadLog(ring);
        long[] times = new long[11];
        for (int i = 0; i < 11; i++) {
            log.transition(100 + i);
            times[i] = time(ring, i & 3);
        }
        assertEquals(22, ring.getLong(ThreadLog.HEAD));
        // Entries 7..10 survive in slots 3, 0, 1, 2.
        assertEquals(107, context(ring, 3));
        assertEquals(108, context(ring, 0));
        assertEquals(109, context(ring, 1));
        assertEquals(110, context(ring, 2));
        for (int i = 7; i <= 10; i++) {
            assertEquals(times[i], time(ring, i & 3));
        }
        for (int i = 1; i < 11; i++) {
            assertTrue(times[i - 1] <= times[i]);
        }
    }

    @Test
    public void continuesAfterEntriesAlreadyCountedInHead() {
        ByteBuffer ring = ring(4, 1);
        ring.putLong(ThreadLog.HEAD, 2 * 6);
        ThreadLog log = new ThreadLog(ring);
        log.transition(42);
        assertEquals(14, ring.getLong(ThreadLog.HEAD));
        assertEquals(42, context(ring, 6 & 3));
        assertEquals(7, log.transitions());
    }

    @Test
    public void ignoresTheCallersPositionAndLimit() {
        ByteBuffer ring = ring(2, 1);
        ring.position(40).limit(48);
        new ThreadLog(ring).transition(3);
        assertEquals(3, context(ring.clear(), 0));
    }

    @Test
    public void rejectsUnusableRings() {
        rejects(ring(3, 1));
        rejects(ring(0, 1));
        rejects(withCapacityField(ring(4, 1), -4));
        rejects(withCapacityField(ring(4, 1), 8));
        rejects(withCapacityField(ring(4, 1), Long.MIN_VALUE));
        rejects(ByteBuffer.allocate(128));
        rejects(ByteBuffer.allocateDirect(32));
        rejects(ring(4, 1).asReadOnlyBuffer());
    }

    private static ByteBuffer withCapacityField(ByteBuffer ring, long capacity) {
        return ring.putLong(ThreadLog.CAPACITY, capacity);
    }

    private static void rejects(ByteBuffer ring) {
        try {
            new ThreadLog(ring);
            fail("accepted an unusable ring");
        } catch (IllegalArgumentException expected) {
            assertTrue(expected.getMessage().startsWith("jfrctx: "));
        }
    }

    @Test
    public void twoLogsOnOneRingWriteOneSequence() {
        // Two copies of the facade (two class loaders) on one thread share the thread's ring.
        ByteBuffer ring = ring(8, 3);
        ThreadLog a = new ThreadLog(ring);
        ThreadLog b = new ThreadLog(ring);
        assertEquals(0, a.transition(1));
        assertEquals("b sees what a wrote", 1, b.transition(2));
        assertEquals("b wrote last", ThreadLog.SAME, b.transition(1));
        assertEquals("a sees what b wrote last", 1, a.transition(0));
        assertEquals(0, b.transition(7));
        assertEquals(7, a.transition(0));
        assertEquals(12, ring.getLong(ThreadLog.HEAD));
        long[] expected = {1, 2, 1, 0, 7, 0};
        for (int i = 0; i < expected.length; i++) {
            assertEquals("context of entry " + i, expected[i], context(ring, i));
            if (i > 0) {
                assertTrue(time(ring, i - 1) <= time(ring, i));
            }
        }
        assertEquals(6, a.transitions());
        assertEquals(6, b.transitions());
    }
}
