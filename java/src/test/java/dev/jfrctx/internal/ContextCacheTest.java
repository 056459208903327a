package dev.jfrctx.internal;

import static dev.jfrctx.internal.ContextDataTest.entries;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import org.junit.Test;

public class ContextCacheTest {

    /** A key no other test uses: the declaration is global to this copy of the facade. */
    private static final String UNIQUE = "context_cache_test_unique";

    @Test
    public void aMapInAnotherMapsSlotMissesAndTheLaterOneIsFound() {
        ContextData base = ContextData.of(new String[] {"tenant", "t2"}, true);
        EntryList first = entries("endpoint", "/first");
        int slot = ContextCache.index(base, first);
        String other = null;
        for (int n = 0; other == null; n++) {
            if (ContextCache.index(base, entries("endpoint", "/other-" + n)) == slot) {
                other = "/other-" + n;
            }
        }
        ContextData firstResult = ContextData.of(base.mergedWith(first), true);
        ContextCache.Entry kept = ContextCache.put(base, first, firstResult);
        assertSame(kept, ContextCache.get(base, entries("endpoint", "/first")));
        assertNull("same slot, another map", ContextCache.get(base, entries("endpoint", other)));
        EntryList others = entries("endpoint", other);
        ContextData otherResult = ContextData.of(base.mergedWith(others), true);
        ContextCache.Entry replaced = ContextCache.put(base, others, otherResult);
        assertSame(replaced, ContextCache.get(base, entries("endpoint", other)));
        assertNull("evicted", ContextCache.get(base, entries("endpoint", "/first")));
    }

    @Test
    public void aMapIsAdmittedAtItsSecondMissAndTheFirstLeavesTheTableAlone() {
        ContextData base = ContextData.of(new String[] {"tenant", "t3"}, true);
        EntryList recurring = entries("endpoint", "/recurring");
        ContextData recurringResult = ContextData.of(base.mergedWith(recurring), true);
        ContextCache.Entry kept = ContextCache.put(base, recurring, recurringResult);
        // A map met once (a request id) hashing to the same table slot.
        int slot = ContextCache.index(base, recurring);
        String request = null;
        for (int n = 0; request == null; n++) {
            EntryList candidate = entries("endpoint", "/recurring", "request", "r-" + n);
            if (ContextCache.index(base, candidate) == slot) {
                request = "r-" + n;
            }
        }
        EntryList once = entries("endpoint", "/recurring", "request", request);
        assertNull(ContextCache.get(base, once));
        assertFalse("the first miss is only remembered", ContextCache.admit(base, once));
        assertSame("the map that recurs keeps its slot", kept, ContextCache.get(base, recurring));
        assertTrue("the second miss of the same map is admitted",
                ContextCache.admit(base, entries("endpoint", "/recurring", "request", request)));
        assertFalse("another base is another map", ContextCache.admit(ContextData.EMPTY, once));
    }

    @Test
    public void mapsHoldingAnUncachedKeyAreNeitherFoundNorRemembered() {
        ContextData base = ContextData.of(new String[] {"tenant", "t1"}, true);
        EntryList listed = entries("endpoint", "/a");
        // A unique map hashing to the listed one's slot: storing it would evict that one.
        String id = null;
        int slot = ContextCache.index(base, listed);
        for (int n = 0; id == null; n++) {
            if (ContextCache.index(base, entries("endpoint", "/a", UNIQUE, "s-" + n)) == slot) {
                id = "s-" + n;
            }
        }
        EntryList unique = entries("endpoint", "/a", UNIQUE, id);
        ContextData listedResult = ContextData.of(base.mergedWith(listed), true);
        ContextData uniqueResult = ContextData.of(base.mergedWith(unique), true);

        ContextCache.uncached(UNIQUE);
        ContextCache.uncached(UNIQUE); // the same key again: a no-op

        ContextCache.Entry kept = ContextCache.put(base, listed, listedResult);
        assertSame(kept, ContextCache.get(base, entries("endpoint", "/a")));
        assertSame(listedResult, kept.result());

        ContextCache.Entry own = ContextCache.put(base, unique, uniqueResult);
        assertNotNull("the builder still gets its own entry", own);
        assertSame(uniqueResult, own.result());
        assertTrue("its base is what the builder compares it by", own.extendsBase(base));
        assertNull(ContextCache.get(base, entries("endpoint", "/a", UNIQUE, id)));
        assertFalse("never admitted", ContextCache.admit(base, unique));
        assertFalse("not even when missed again", ContextCache.admit(base, unique));
        // The map that recurs, in the same slot, was not evicted by the unique one.
        assertSame(kept, ContextCache.get(base, entries("endpoint", "/a")));

        assertThrows(IllegalStateException.class, () -> ContextCache.uncached("another_key"));
    }
}
