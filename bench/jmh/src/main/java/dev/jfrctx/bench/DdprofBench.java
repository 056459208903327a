package dev.jfrctx.bench;

import com.datadoghq.profiler.JavaProfiler;
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
 * Datadog's java-profiler ({@code com.datadoghq:ddprof}): {@code JavaProfiler.setContext(spanId,
 * rootSpanId)}, which writes the thread's slot in a shared context page (no JNI per call). The
 * profiler is started with CPU sampling at the agent's default period when it can be; the status
 * is reported in the summary.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
public class DdprofBench {

    private JavaProfiler profiler;
    private boolean started;
    private long span = 1;

    @Setup(Level.Trial)
    public void setup() throws Exception {
        profiler = JavaProfiler.getInstance();
        String file = PeerStatus.tempFile("ddprof-bench", ".jfr").toString();
        String[] commands = {
            "start,cpu=20ms,file=" + file,
            "start,cpu=20ms,cpuEngine=itimer,file=" + file,
            "start,wall=20ms,file=" + file,
        };
        StringBuilder failures = new StringBuilder();
        for (String command : commands) {
            try {
                profiler.execute(command);
                started = true;
                PeerStatus.record("ddprof", "version " + profiler.getVersion() + ", running: " + command.replace(file, "FILE"));
                break;
            } catch (Exception | Error e) {
                failures.append(command.replace(file, "FILE")).append(" -> ").append(e).append("; ");
            }
        }
        if (!started) {
            PeerStatus.record("ddprof", "version " + profiler.getVersion() + ", loaded but not sampling (" + failures + ")");
        }
        profiler.setContext(1, 1);
        profiler.setContext(0, 0);
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

    /** Install and clear: two {@code setContext} calls. */
    @Benchmark
    public void setContextPair() {
        long s = span++;
        profiler.setContext(s, s);
        profiler.setContext(0, 0);
    }
}
