package dev.jfrctx.bench;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;

/** The floor: one timestamp, which every recorded context switch needs. */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class FloorBench {

    /** One {@code System.nanoTime()}: the unit every ratio in the summary is against. */
    @Benchmark
    public long nanoTime() {
        return System.nanoTime();
    }

    /** Two reads: the clock cost of one install + uninstall pair (two transitions). */
    @Benchmark
    public long nanoTimePair() {
        return System.nanoTime() + System.nanoTime();
    }
}
