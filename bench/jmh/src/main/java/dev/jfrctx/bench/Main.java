package dev.jfrctx.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.openjdk.jmh.profile.GCProfiler;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs every hot-path benchmark in one go, each group in its own forked JVM with the JVM options
 * it needs (agent loaded or not, JNI library path, ...), with the same iteration settings and
 * {@code -prof gc}, and writes one combined table.
 *
 * <pre>
 * java -jar benchmarks.jar -out DIR [-label jdk17] [-agent libjfrctx.so] [-jni libswitch.so]
 *                          [-javaagent jfrctx-agent.jar] [-smoke]
 *                          [-groups plain,agent,jfr,jni,ddprof,pyroscope,handoff,handoff-javaagent]
 * </pre>
 *
 * Writes {@code DIR/jmh-LABEL-GROUP.json} (JMH's raw results), {@code DIR/jmh-LABEL.tsv} (one row
 * per benchmark: median, min and max over the measurement iterations, mean, JMH's 99.9 % error,
 * bytes allocated per op) and {@code DIR/peers-LABEL.txt} (how each peer was set up).
 */
public final class Main {

    private static final String PKG = "dev\\.jfrctx\\.bench\\.";

    private Main() {
    }

    /** A set of benchmarks run in forks with the same extra JVM options. */
    private static final class Group {
        final String name;
        final String description;
        final List<String> includes;
        final List<String> jvmArgs;
        final String skipReason;

        Group(String name, String description, List<String> includes, List<String> jvmArgs, String skipReason) {
            this.name = name;
            this.description = description;
            this.includes = includes;
            this.jvmArgs = jvmArgs;
            this.skipReason = skipReason;
        }
    }

    public static void main(String[] args) throws IOException, RunnerException {
        String out = null;
        String label = "jdk" + Runtime.version().feature();
        String agent = null;
        String jni = null;
        String javaagent = null;
        boolean smoke = false;
        Set<String> only = null;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "-out": out = args[++i]; break;
                case "-label": label = args[++i]; break;
                case "-agent": agent = args[++i]; break;
                case "-jni": jni = args[++i]; break;
                case "-javaagent": javaagent = args[++i]; break;
                case "-smoke": smoke = true; break;
                case "-groups": only = new LinkedHashSet<>(Arrays.asList(args[++i].split(","))); break;
                default:
                    System.err.println("usage: -out DIR [-label L] [-agent SO] [-jni SO] [-javaagent JAR] [-smoke] [-groups a,b]");
                    System.exit(2);
            }
        }
        if (out == null) {
            System.err.println("bench: -out DIR is required");
            System.exit(2);
        }
        Path dir = Paths.get(out).toAbsolutePath();
        Files.createDirectories(dir);
        Path status = dir.resolve("peers-" + label + ".txt");
        Files.deleteIfExists(status);

        List<String> base = new ArrayList<>(Arrays.asList(
                "-Xms1g", "-Xmx1g", "-Djfrctx.bench.status=" + status));

        List<Group> groups = new ArrayList<>();
        groups.add(new Group("plain", "no agent: floor, ring writer, facade as a no-op",
                List.of(PKG + "FloorBench\\.", PKG + "RingBench\\.", PKG + "FacadeBench\\.",
                        PKG + "FreshThreadBench\\."),
                List.of(), null));
        groups.add(new Group("agent", "agent loaded (sink=jsonl:/dev/null)",
                List.of(PKG + "FacadeBench\\.", PKG + "FreshThreadBench\\."),
                agent == null ? List.of() : List.of("-agentpath:" + agent + "=sink=jsonl:/dev/null"),
                agent == null ? "no -agent given" : null));
        groups.add(new Group("jfr", "JFR event per context (recording running)",
                List.of(PKG + "JfrEventBench\\."), List.of(), null));
        groups.add(new Group("jni", "native setter, one JNI call per transition",
                List.of(PKG + "JniBench\\."),
                jni == null ? List.of() : List.of("-Djfrctx.bench.jni=" + jni),
                jni == null ? "no -jni given" : null));
        groups.add(new Group("ddprof", "Datadog java-profiler (com.datadoghq:ddprof)",
                List.of(PKG + "DdprofBench\\."), List.of(), null));
        groups.add(new Group("pyroscope", "Pyroscope agent (io.pyroscope:agent)",
                List.of(PKG + "PyroscopeBench\\."), List.of(), null));
        // Hand-offs through the JDK's executors: the same benchmarks without and with the Java
        // agent (both with the native agent, whose ring the activations write).
        List<String> native_ = agent == null ? List.of() : List.of("-agentpath:" + agent + "=sink=jsonl:/dev/null");
        groups.add(new Group("handoff", "hand-offs, native agent, no Java agent",
                List.of(PKG + "HandOffBench\\."), native_, agent == null ? "no -agent given" : null));
        List<String> withJavaagent = new ArrayList<>(native_);
        if (javaagent != null) {
            withJavaagent.add("-javaagent:" + javaagent);
        }
        groups.add(new Group("handoff-javaagent", "hand-offs, native agent and Java agent",
                List.of(PKG + "HandOffBench\\."), withJavaagent,
                agent == null ? "no -agent given" : javaagent == null ? "no -javaagent given" : null));

        List<String> rows = new ArrayList<>();
        rows.add(String.join("\t", "label", "group", "benchmark", "median_ns", "min_ns", "max_ns",
                "mean_ns", "error_ns", "alloc_bytes_per_op", "iterations",
                "cpu_median_ns", "cpu_min_ns", "cpu_max_ns"));
        List<String> failures = new ArrayList<>();
        for (Group g : groups) {
            if (only != null && !only.contains(g.name)) {
                continue;
            }
            if (g.skipReason != null) {
                failures.add(g.name + ": skipped (" + g.skipReason + ")");
                continue;
            }
            List<String> jvm = new ArrayList<>(base);
            jvm.addAll(g.jvmArgs);
            ChainedOptionsBuilder ob = new OptionsBuilder()
                    .forks(1)
                    .threads(1)
                    .jvmArgs(jvm.toArray(new String[0]))
                    .addProfiler(GCProfiler.class)
                    .addProfiler(CpuTimeProfiler.class)
                    .shouldFailOnError(false)
                    .result(dir.resolve("jmh-" + label + "-" + g.name + ".json").toString())
                    .resultFormat(ResultFormatType.JSON);
            for (String inc : g.includes) {
                ob.include(inc);
            }
            if (smoke) {
                ob.warmupIterations(1).warmupTime(TimeValue.milliseconds(300))
                        .measurementIterations(2).measurementTime(TimeValue.milliseconds(300));
            } else {
                ob.warmupIterations(3).warmupTime(TimeValue.seconds(1))
                        .measurementIterations(5).measurementTime(TimeValue.seconds(1));
            }
            System.out.println("==== bench group " + g.name + ": " + g.description + " " + g.jvmArgs);
            Collection<RunResult> results;
            try {
                results = new Runner(ob.build()).run();
            } catch (RunnerException | RuntimeException e) {
                failures.add(g.name + ": " + e);
                continue;
            }
            int expected = 0;
            for (RunResult r : results) {
                rows.add(row(label, g.name, r));
                expected++;
            }
            if (expected == 0) {
                failures.add(g.name + ": no result (the fork failed; see the log above)");
            }
        }
        Path tsv = dir.resolve("jmh-" + label + ".tsv");
        Files.write(tsv, rows, StandardCharsets.UTF_8);
        if (!failures.isEmpty()) {
            Files.write(dir.resolve("jmh-" + label + "-failures.txt"), failures, StandardCharsets.UTF_8);
        }
        printTable(System.out, label, rows, failures, status);
    }

    private static String row(String label, String group, RunResult r) {
        String bench = r.getParams().getBenchmark().replaceFirst("^dev\\.jfrctx\\.bench\\.", "");
        List<Double> scores = new ArrayList<>();
        List<Double> cpu = new ArrayList<>();
        for (BenchmarkResult br : r.getBenchmarkResults()) {
            for (IterationResult ir : br.getIterationResults()) {
                scores.add(ir.getPrimaryResult().getScore());
                Result<?> c = ir.getSecondaryResults().get("cpu.time.norm");
                if (c != null && !Double.isNaN(c.getScore())) {
                    cpu.add(c.getScore());
                }
            }
        }
        scores.sort(null);
        cpu.sort(null);
        Result<?> primary = r.getPrimaryResult();
        Result<?> alloc = r.getSecondaryResults().get("gc.alloc.rate.norm");
        return String.join("\t", label, group, bench,
                fmt(median(scores)), fmt(scores.get(0)), fmt(scores.get(scores.size() - 1)),
                fmt(primary.getScore()), fmt(primary.getScoreError()),
                alloc == null ? "NaN" : fmt(alloc.getScore()), Integer.toString(scores.size()),
                fmt(median(cpu)), cpu.isEmpty() ? "NaN" : fmt(cpu.get(0)),
                cpu.isEmpty() ? "NaN" : fmt(cpu.get(cpu.size() - 1)));
    }

    private static double median(List<Double> sorted) {
        int n = sorted.size();
        if (n == 0) {
            return Double.NaN;
        }
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    private static String fmt(double v) {
        return String.format(Locale.ROOT, "%.3f", v);
    }

    private static void printTable(PrintStream out, String label, List<String> rows, List<String> failures,
            Path status) throws IOException {
        double floor = Double.NaN;
        for (String r : rows.subList(1, rows.size())) {
            String[] f = r.split("\t");
            if (f[2].equals("FloorBench.nanoTime")) {
                floor = Double.parseDouble(f[10]);
            }
        }
        out.println();
        out.println("==== JMH summary (" + label + "): ns per op, median [min-max] of the measurement iterations;"
                + " wall = JMH's score, cpu = the worker thread's CPU time (FreshThreadBench: the whole"
                + " process's); x nano = cpu ratio to"
                + " System.nanoTime() measured in this run");
        out.printf(Locale.ROOT, "%-10s %-40s %28s %28s %8s %8s%n", "group", "benchmark",
                "wall ns/op median [min-max]", "cpu ns/op median [min-max]", "x nano", "B/op");
        for (String r : rows.subList(1, rows.size())) {
            String[] f = r.split("\t");
            double cpu = Double.parseDouble(f[10]);
            out.printf(Locale.ROOT, "%-10s %-40s %10.1f [%6.1f-%7.1f] %10.1f [%6.1f-%7.1f] %8.2f %8.1f%n",
                    f[1], f[2], Double.parseDouble(f[3]), Double.parseDouble(f[4]), Double.parseDouble(f[5]),
                    cpu, Double.parseDouble(f[11]), Double.parseDouble(f[12]), cpu / floor,
                    Double.parseDouble(f[8]));
        }
        for (String f : failures) {
            out.println("not measured: " + f);
        }
        if (Files.exists(status)) {
            for (String line : Files.readAllLines(status, StandardCharsets.UTF_8)) {
                out.println("peer: " + line.replace('\t', ' '));
            }
        }
    }
}
