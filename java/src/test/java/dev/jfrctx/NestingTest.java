package dev.jfrctx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import org.junit.Test;

public class NestingTest extends ContextTestBase {

    @Test
    public void nestingExtendsAndRestores() {
        try (RecordingContext outer = RecordingContext.where(A, "1").build()) {
            assertEquals(map("a", "1"), entries());
            try (RecordingContext inner = RecordingContext.where(B, "2").where(C, "3").build()) {
                assertEquals(map("a", "1", "b", "2", "c", "3"), entries());
            }
            assertEquals(map("a", "1"), entries());
        }
        assertEquals(map(), entries());
    }

    @Test
    public void innerOverridesKeyAndCloseRestoresOuterValue() {
        try (RecordingContext outer = RecordingContext.where(A, "outer").where(B, "kept").build()) {
            try (RecordingContext inner = RecordingContext.where(A, "inner").build()) {
                assertEquals(map("a", "inner", "b", "kept"), entries());
            }
            assertEquals(map("a", "outer", "b", "kept"), entries());
        }
    }

    @Test
    public void laterWhereForSameKeyWins() {
        try (RecordingContext ctx = RecordingContext.where(A, "first").where(B, "x").where(A, "second").build()) {
            assertEquals(map("a", "second", "b", "x"), entries());
        }
    }

    @Test
    public void sameValuesAgainIsStillAScopeOfItsOwn() {
        try (RecordingContext outer = RecordingContext.where(A, "1").build()) {
            RecordingContext same = RecordingContext.where(A, "1").build();
            assertEquals(map("a", "1"), entries());
            try {
                outer.close();
                throw new AssertionError("outer closed while inner open");
            } catch (IllegalStateException expected) {
                // the identical inner context is still a separate scope
            }
            same.close();
            assertEquals(map("a", "1"), entries());
        }
    }

    @Test
    public void builderCanBeBuiltAgainAndExtendsWhatIsInstalledThen() {
        RecordingContext.Builder builder = RecordingContext.where(B, "2");
        try (RecordingContext first = builder.build()) {
            assertEquals(map("b", "2"), entries());
        }
        try (RecordingContext base = RecordingContext.where(A, "1").build();
                RecordingContext second = builder.build()) {
            assertEquals(map("a", "1", "b", "2"), entries());
        }
    }

    @Test
    public void isBoundFollowsTheInstalledContext() {
        assertFalse(A.isBound());
        try (RecordingContext outer = RecordingContext.where(A, "1").build()) {
            assertTrue(A.isBound());
            assertTrue(RecordingContextKey.forName("a").isBound());
            assertFalse(B.isBound());
            try (RecordingContext inner = RecordingContext.where(B, "2").build()) {
                assertTrue(A.isBound());
                assertTrue(B.isBound());
            }
            assertFalse(B.isBound());
        }
        assertFalse(A.isBound());
    }

    @Test
    public void isBoundIsPerThread() throws Exception {
        try (RecordingContext ctx = RecordingContext.where(A, "1").build()) {
            assertFalse(OtherThread.call("other", A::isBound));
            assertTrue(A.isBound());
        }
    }

    @Test
    public void manyDistinctKeysStaySorted() {
        RecordingContext.Builder builder = RecordingContext.where(RecordingContextKey.forName("m"), "m");
        for (String name : new String[] {"z", "b", "y", "a", "k"}) {
            builder.where(RecordingContextKey.forName(name), name.toUpperCase());
        }
        try (RecordingContext ctx = builder.build();
                RecordingContext more = RecordingContext.where(RecordingContextKey.forName("c"), "C")
                        .where(RecordingContextKey.forName("z"), "Z2").build()) {
            assertEquals(map("a", "A", "b", "B", "c", "C", "k", "K", "m", "m", "y", "Y", "z", "Z2"),
                    entries());
        }
    }
}
