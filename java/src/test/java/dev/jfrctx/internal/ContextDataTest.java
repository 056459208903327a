package dev.jfrctx.internal;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;

import org.junit.Test;

public class ContextDataTest {

    /** An entry list of {@code k0, v0, k1, v1, ...} (also for {@code ContextCacheTest}). */
    static EntryList entries(String... kv) {
        EntryList list = new EntryList();
        for (int i = 0; i < kv.length; i += 2) {
            list.put(kv[i], kv[i + 1]);
        }
        return list;
    }

    @Test
    public void entryListKeepsKeysSortedAndLastValue() {
        EntryList list = entries("m", "1", "c", "2", "x", "3", "a", "4", "c", "5", "b", "6");
        assertEquals(5, list.size());
        String[] seen = new String[10];
        for (int i = 0; i < 5; i++) {
            seen[2 * i] = list.key(i);
            seen[2 * i + 1] = list.value(i);
        }
        assertArrayEquals(new String[] {"a", "4", "b", "6", "c", "5", "m", "1", "x", "3"}, seen);
        assertTrue(list.containsKey("m"));
        assertFalse(list.containsKey("n"));
    }

    @Test
    public void mergeOverridesAndInterleaves() {
        ContextData base = ContextData.of(new String[] {"b", "1", "d", "2"}, true);
        assertArrayEquals(new String[] {"a", "0", "b", "9", "c", "5", "d", "2", "e", "7"},
                base.mergedWith(entries("e", "7", "b", "9", "a", "0", "c", "5")));
        assertArrayEquals(new String[] {"x", "1"}, ContextData.EMPTY.mergedWith(entries("x", "1")));
    }

    @Test
    public void mergeReportsNoChange() {
        ContextData base = ContextData.of(new String[] {"b", "1", "d", "2"}, true);
        assertNull(base.mergedWith(entries("d", "2")));
        assertNull(base.mergedWith(entries("b", "1", "d", "2")));
    }

    @Test
    public void lookupAndEmpty() {
        ContextData data = ContextData.of(new String[] {"a", "1", "c", "2", "e", "3"}, true);
        assertTrue(data.containsKey("a"));
        assertTrue(data.containsKey("e"));
        assertFalse(data.containsKey("b"));
        assertFalse(data.containsKey("f"));
        assertEquals(3, data.size());
        assertSame(ContextData.EMPTY, ContextData.of(new String[0], true));
        assertFalse(ContextData.EMPTY.containsKey("a"));
        assertEquals(0, ContextData.EMPTY.id());
    }

    @Test
    public void releasedIdsDrainEverythingOnce() throws Exception {
        ReleasedIds ids = new ReleasedIds();
        Thread[] threads = new Thread[4];
        for (int t = 0; t < threads.length; t++) {
            long base = 1000L * t;
            threads[t] = new Thread(() -> {
                for (int i = 1; i <= 500; i++) {
                    ids.add(base + i);
                }
            });
            threads[t].start();
        }
        long sum = 0;
        int count = 0;
        for (Thread thread : threads) {
            thread.join();
        }
        long[] drained = ids.drain();
        for (long id : drained) {
            sum += id;
            count++;
        }
        assertEquals(2000, count);
        assertEquals(4 * (500 * 501 / 2) + 500 * (1000 + 2000 + 3000), sum);
        assertNull(ids.drain());
    }
}
