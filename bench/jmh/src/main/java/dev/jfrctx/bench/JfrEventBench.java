package dev.jfrctx.bench;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.Recording;
import jdk.jfr.StackTrace;
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
 * The JDK's own way to mark a context (JDK 25 {@code @Contextual}): one duration event per
 * context, {@code begin()} when it is installed and {@code commit()} when it is closed, with a
 * recording running. Compiled for JDK 17, so the field carries no {@code @Contextual} annotation
 * (metadata only; the commit path is the same).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Benchmark)
public class JfrEventBench {

    /** A context as a JFR event: its span is the event's duration. */
    @Name("jfrctx.bench.Context")
    @Label("Context")
    @StackTrace(false)
    static final class ContextEvent extends Event {
        @Label("endpoint")
        String endpoint;
    }

    private Recording recording;
    private final String value = "/orders";

    @Setup(Level.Trial)
    public void start() {
        recording = new Recording();
        recording.enable(ContextEvent.class).withThreshold(Duration.ZERO);
        recording.setToDisk(true);
        recording.setMaxSize(64L << 20); // older chunks are dropped: bounded disk use
        recording.start();
    }

    @TearDown(Level.Trial)
    public void stop() {
        recording.stop();
        recording.close();
    }

    /** One context installed and closed: begin + commit of its event. */
    @Benchmark
    public void eventPerSwitch() {
        ContextEvent e = new ContextEvent();
        e.endpoint = value;
        e.begin();
        e.commit();
    }
}
