package dev.jfrctx.bench;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/** Crossing JNI once per transition, as JNI-based context setters do (no timestamp taken). */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Thread)
public class JniBench {

    @Setup
    public void setup() {
        JniSwitch.set(7);
        if (JniSwitch.get() != 7) {
            throw new IllegalStateException("libswitch.so does not store the id");
        }
        JniSwitch.set(0);
    }

    /** Install and uninstall: two native calls. */
    @Benchmark
    public void setPair() {
        JniSwitch.set(42);
        JniSwitch.set(0);
    }
}
