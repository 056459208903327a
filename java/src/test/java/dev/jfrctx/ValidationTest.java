package dev.jfrctx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import org.junit.Test;

public class ValidationTest extends ContextTestBase {

    private static String chars(int length) {
        return "x".repeat(length);
    }

    /** Runs {@code action}, expecting {@code type} with a one-line "jfrctx: ..." message. */
    private static void expect(Class<? extends RuntimeException> type, String fragment, Runnable action) {
        try {
            action.run();
        } catch (RuntimeException e) {
            assertEquals(e.toString(), type, e.getClass());
            String message = e.getMessage();
            assertTrue(message, message.startsWith("jfrctx: "));
            assertFalse(message, message.contains("\n"));
            assertTrue(message, message.contains(fragment));
            return;
        }
        fail("expected " + type.getSimpleName());
    }

    @Test
    public void keyNameIsValidated() {
        expect(NullPointerException.class, "null", () -> RecordingContextKey.forName(null));
        expect(IllegalArgumentException.class, "empty", () -> RecordingContextKey.forName(""));
        expect(IllegalArgumentException.class, "MAX_NAME_LENGTH",
                () -> RecordingContextKey.forName(chars(RecordingContextKey.MAX_NAME_LENGTH + 1)));
        String longest = chars(RecordingContextKey.MAX_NAME_LENGTH);
        assertEquals(longest, RecordingContextKey.forName(longest).name());
        assertEquals(128, RecordingContextKey.MAX_NAME_LENGTH);
    }

    @Test
    public void keysAreValues() {
        RecordingContextKey one = RecordingContextKey.forName("endpoint");
        RecordingContextKey two = RecordingContextKey.forName("endpoint");
        assertEquals(one, two);
        assertEquals(one.hashCode(), two.hashCode());
        assertNotEquals(one, RecordingContextKey.forName("request"));
        assertNotEquals(one, "endpoint");
        assertEquals("endpoint", one.name());
        assertEquals("RecordingContextKey[endpoint]", one.toString());
    }

    @Test
    public void entryArgumentsAreValidated() {
        expect(NullPointerException.class, "key", () -> RecordingContext.where(null, "v"));
        expect(NullPointerException.class, "\"a\"", () -> RecordingContext.where(A, null));
        expect(IllegalArgumentException.class, "empty", () -> RecordingContext.where(A, ""));
        expect(IllegalArgumentException.class, "MAX_VALUE_LENGTH",
                () -> RecordingContext.where(A, chars(RecordingContext.MAX_VALUE_LENGTH + 1)));
        RecordingContext.Builder builder = RecordingContext.where(A, "1");
        expect(NullPointerException.class, "key", () -> builder.where(null, "v"));
        expect(NullPointerException.class, "\"b\"", () -> builder.where(B, null));
        expect(IllegalArgumentException.class, "empty", () -> builder.where(B, ""));
        expect(IllegalArgumentException.class, "MAX_VALUE_LENGTH",
                () -> builder.where(B, chars(RecordingContext.MAX_VALUE_LENGTH + 1)));
        try (RecordingContext ctx = builder.build()) {
            assertEquals("a failed where() must not change the builder", map("a", "1"), entries());
        }
    }

    @Test
    public void longestValueIsAccepted() {
        String longest = chars(RecordingContext.MAX_VALUE_LENGTH);
        try (RecordingContext ctx = RecordingContext.where(A, longest).build()) {
            assertEquals(longest, entries().get("a"));
        }
        assertEquals(1024, RecordingContext.MAX_VALUE_LENGTH);
    }

    private static RecordingContext.Builder builderWithKeys(String prefix, int count) {
        RecordingContext.Builder builder = RecordingContext.where(RecordingContextKey.forName(prefix + 0), "v");
        for (int i = 1; i < count; i++) {
            builder.where(RecordingContextKey.forName(prefix + i), "v");
        }
        return builder;
    }

    @Test
    public void maxEntriesInOneBuilder() {
        assertEquals(64, RecordingContext.MAX_ENTRIES);
        RecordingContext.Builder full = builderWithKeys("k", RecordingContext.MAX_ENTRIES);
        full.where(RecordingContextKey.forName("k7"), "replacing does not add an entry");
        expect(IllegalArgumentException.class, "MAX_ENTRIES",
                () -> full.where(RecordingContextKey.forName("one-more"), "v"));
        try (RecordingContext ctx = full.build()) {
            assertEquals(RecordingContext.MAX_ENTRIES, entries().size());
        }
    }

    @Test
    public void maxEntriesCountsTheExtendedContextAndNothingIsInstalledWhenExceeded() {
        try (RecordingContext base = builderWithKeys("base", 40).build()) {
            RecordingContext.Builder more = builderWithKeys("more", 25);
            expect(IllegalArgumentException.class, "65 entries", more::build);
            assertEquals(40, entries().size());
            try (RecordingContext exactlyFull = builderWithKeys("more", 24).build()) {
                assertEquals(64, entries().size());
                try (RecordingContext override = RecordingContext.where(RecordingContextKey.forName("base3"), "new")
                        .build()) {
                    assertEquals("new", entries().get("base3"));
                    assertEquals(64, entries().size());
                }
                expect(IllegalArgumentException.class, "MAX_ENTRIES",
                        () -> RecordingContext.where(A, "1").build());
            }
            assertEquals(40, entries().size());
        }
    }
}
