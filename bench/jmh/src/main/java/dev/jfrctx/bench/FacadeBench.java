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
    static final RecordingContextKey REQUEST = RecordingContextKey.forName("request");

    private long request;

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

    /**
     * A context switch to an existing context and back: {@code activate()} + {@code close()}, the
     * activation not escaping (as with try-with-resources), so C2 can scalar-replace it.
     */
    @Benchmark
    public void snapshotActivateClose() {
        try (RecordingContext.Activation a = snapshot.activate()) {
            // nothing: the switch itself is measured
        }
    }

    /**
     * The same, but the activation escapes (returned to JMH's blackhole): the allocation of the
     * {@code Activation} object (32 B) is then paid.
     */
    @Benchmark
    public RecordingContext.Activation snapshotActivateCloseEscaping() {
        RecordingContext.Activation a = snapshot.activate();
        a.close();
        return a;
    }

    /**
     * {@code build()} + {@code close()} of a pre-built builder whose map was built before: the
     * facade finds it in its bounded cache of built contexts and reuses the interned id (no JNI
     * call, no Cleaner); the scope does not escape.
     */
    @Benchmark
    public void builderBuildClose() {
        try (RecordingContext c = builder.build()) {
            // nothing
        }
    }

    /**
     * A new builder per switch ({@code where(...).build()} + {@code close()}), as request code
     * usually writes it, for a map built before: the cache hit as above plus the builder's own
     * objects.
     */
    @Benchmark
    public void newBuilderBuildClose() {
        try (RecordingContext c = RecordingContext.where(ENDPOINT, "/bench-build").build()) {
            // nothing
        }
    }

    /**
     * A map never seen before per switch, as a server's filter with a request id writes it:
     * {@code where(endpoint).where(request, <counter>).build()} + {@code close()}. Includes the
     * counter's {@code Long.toString}, the merge, the new {@code ContextData} and its id (with the
     * agent: {@code Definitions.define}, no JNI call) and the Cleaner registration that releases
     * it; {@link #requestIdOnly} is the {@code Long.toString} alone.
     */
    @Benchmark
    public void newValueBuildClose() {
        try (RecordingContext c = RecordingContext.where(ENDPOINT, "/orders")
                .where(REQUEST, Long.toString(request++)).build()) {
            // nothing
        }
    }

    /**
     * The part of {@link #newValueBuildClose} the application pays anyway: making the request
     * id string.
     *
     * @return the string (to the blackhole)
     */
    @Benchmark
    public String requestIdOnly() {
        return Long.toString(request++);
    }
}
