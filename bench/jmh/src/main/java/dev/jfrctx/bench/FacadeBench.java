package dev.jfrctx.bench;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The public API on the hot path. Run twice by {@link Main}: with the agent loaded (every install
 * and uninstall writes the thread's ring) and without it (the facade is a no-op that keeps the
 * scope stack).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
public class FacadeBench {

    static final RecordingContextKey ENDPOINT = RecordingContextKey.forName("endpoint");
    static final RecordingContextKey TENANT = RecordingContextKey.forName("tenant");

    private RecordingContext.Snapshot snapshot;
    private RecordingContext.Builder builder;

    @Setup
    public void setup() {
        // Built (and interned, with the agent) once; the benchmark thread's ring is opened here.
        try (RecordingContext ctx = RecordingContext.where(ENDPOINT, "/orders").where(TENANT, "t-17").build()) {
            snapshot = RecordingContext.snapshot();
        }
        builder = RecordingContext.where(ENDPOINT, "/bench-build");
    }

    /** A context switch to an existing context and back: {@code activate()} + {@code close()}. */
    @Benchmark
    public RecordingContext.Activation snapshotActivateClose() {
        RecordingContext.Activation a = snapshot.activate();
        a.close();
        return a;
    }

    /**
     * {@code build()} + {@code close()} of a pre-built builder. The facade does not reuse an
     * interned map here: each {@code build()} merges the entries and (with the agent) interns the
     * map with one JNI call, whose id is released later through a Cleaner.
     */
    @Benchmark
    public RecordingContext builderBuildClose() {
        RecordingContext c = builder.build();
        c.close();
        return c;
    }
}
