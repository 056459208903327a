package dev.jfrctx;

import static org.junit.Assert.assertEquals;

import dev.jfrctx.internal.Introspection;
import java.util.Map;
import java.util.TreeMap;
import org.junit.After;
import org.junit.Before;

/** Shared keys and checks; every test must leave the test thread with the empty context. */
abstract class ContextTestBase {

    static final RecordingContextKey A = RecordingContextKey.forName("a");
    static final RecordingContextKey B = RecordingContextKey.forName("b");
    static final RecordingContextKey C = RecordingContextKey.forName("c");

    @Before
    public void startsEmpty() {
        assertEquals("context leaked into this test", Map.of(), Introspection.currentEntries());
    }

    @After
    public void endsEmpty() {
        assertEquals("test left a context installed", Map.of(), Introspection.currentEntries());
    }

    /** The current thread's entries. */
    static Map<String, String> entries() {
        return Introspection.currentEntries();
    }

    /** A sorted map from alternating keys and values. */
    static Map<String, String> map(String... kv) {
        Map<String, String> map = new TreeMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            map.put(kv[i], kv[i + 1]);
        }
        return map;
    }
}
