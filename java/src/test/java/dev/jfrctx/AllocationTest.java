package dev.jfrctx;

import static org.junit.Assert.assertTrue;

import org.junit.Test;

/**
 * A context switch allocates nothing in steady state (without the agent here; with a live ring in
 * {@code AgentModeMain}): the scope objects are scalar-replaced and a rebuilt map comes from the
 * facade's cache.
 */
public class AllocationTest extends ContextTestBase {

    @Test
    public void activateCloseAllocatesNothing() {
        RecordingContext.Snapshot snapshot;
        try (RecordingContext ctx = RecordingContext.where(A, "1").where(B, "2").build()) {
            snapshot = RecordingContext.snapshot();
        }
        double perOp = SwitchAllocation.activateClose(snapshot);
        assertTrue("activate()+close() allocates " + perOp + " B per pair", perOp < 0.01);
    }

    @Test
    public void rebuildCloseAllocatesNothing() {
        RecordingContext.Builder builder = RecordingContext.where(A, "x").where(C, "y");
        try (RecordingContext outer = RecordingContext.where(B, "outer").build()) {
            double perOp = SwitchAllocation.buildClose(builder);
            assertTrue("build()+close() allocates " + perOp + " B per pair", perOp < 0.01);
        }
    }
}
