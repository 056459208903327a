package dev.jfrctx.bench;

import io.pyroscope.PyroscopeAsyncProfiler;
import io.pyroscope.labels.v2.ConstantContext;
import io.pyroscope.labels.v2.LabelsSet;
import io.pyroscope.vendor.one.profiler.AsyncProfiler;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Pyroscope's Java agent ({@code io.pyroscope:agent}): {@code ConstantContext.activate()} /
 * {@code deactivate()} of a pre-registered label set, each a JNI call into its bundled
 * async-profiler ({@code setContextId}). This is the equivalent of activating an existing
 * snapshot. ({@code ScopedContext} / {@code LabelsWrapper.run} register a new context per call
 * in a map that only the exporter's periodic dump empties, so a tight loop without the exporter
 * would grow without bound; they are not measured.)
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
public class PyroscopeBench {

    private ConstantContext context;
    private AsyncProfiler profiler;
    private boolean started;

    @Setup(Level.Trial)
    public void setup() throws Exception {
        profiler = PyroscopeAsyncProfiler.getAsyncProfiler();
        String file = PeerStatus.tempFile("pyroscope-bench", ".jfr").toString();
        String[] commands = {
            "start,event=cpu,interval=20ms,jfr,file=" + file,
            "start,event=itimer,interval=20ms,jfr,file=" + file,
        };
        StringBuilder failures = new StringBuilder();
        for (String command : commands) {
            try {
                profiler.execute(command);
                started = true;
                PeerStatus.record("pyroscope", "async-profiler " + profiler.getVersion() + ", running: " + command.replace(file, "FILE"));
                break;
            } catch (Exception | Error e) {
                failures.append(command.replace(file, "FILE")).append(" -> ").append(e).append("; ");
            }
        }
        if (!started) {
            PeerStatus.record("pyroscope", "loaded but not sampling (" + failures + ")");
        }
        context = ConstantContext.of(new LabelsSet("endpoint", "/orders", "tenant", "t-17"));
        context.activate();
        context.deactivate();
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        if (started) {
            try {
                profiler.stop();
            } catch (RuntimeException e) {
                // already stopped
            }
        }
    }

    /** Install and uninstall: two JNI calls. */
    @Benchmark
    public void constantContextPair() {
        context.activate();
        context.deactivate();
    }
}
