package dev.jfrctx.internal;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import org.junit.Test;

/** Without the agent, nothing is interned and no ring is opened, but contexts still work. */
public class NoAgentTest {

    @Test
    public void facadeIsANoOpWithoutTheAgent() throws Exception {
        assertFalse(AgentLink.isLive());
        assertNull(ReleasedIds.class.getName(), new ReleasedIds().drain());
        RecordingContextKey key = RecordingContextKey.forName("k");
        try (RecordingContext ctx = RecordingContext.where(key, "v").build()) {
            assertEquals(0, Introspection.currentId());
            assertEquals(1, Introspection.currentEntries().size());
            assertNull(ThreadState.current().log());
        }
        assertEquals(0, AgentLink.intern(new String[] {"k", "v"}, null));
        assertNull(AgentLink.register(1, 0));
        AgentLink.release(1);
    }
}
