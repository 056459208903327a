package dev.jfrctx.bench.server;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.CompilationMXBean;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.catalina.Context;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.core.StandardThreadExecutor;
import org.apache.catalina.startup.Tomcat;
import org.apache.tomcat.util.descriptor.web.FilterDef;
import org.apache.tomcat.util.descriptor.web.FilterMap;

/**
 * The server benchmark's application: an embedded Apache Tomcat 10.1 on 127.0.0.1 with the five
 * endpoints of {@link BenchServlet} behind {@link BenchFilter}, and two admin endpoints the
 * harness ({@code bench/server/run.py}) reads around its measurement window:
 *
 * <ul>
 *   <li>{@code /admin/stats}: one JSON line with {@code System.nanoTime()}, the wall clock, GC
 *       count and time, JIT compilation time, requests served, and — when this JVM runs its own
 *       JFR {@code RecordingStream} ({@code --jfr-stream}) — the execution samples it received,
 *       and with two filter modes {@code A/B} the phases completed so far ({@link Phases});
 *   <li>{@code /admin/stop}: stops the server; {@code main} returns and the JVM exits normally
 *       (so the agents print their exit lines).
 * </ul>
 *
 * <pre>
 *   java [profiler options] -cp tomcat jars:jfrctx.jar:classes dev.jfrctx.bench.server.BenchServer
 *        --filter MODE|MODE/MODE   (off, snapshot, endpoint, request, pyroscope-endpoint,
 *                                   pyroscope-request; two alternate every --phase-ms, 2000)
 *        [--phase-ms N] [--phase-groups name=prefix|prefix;...] [--virtual]
 *        [--jfr-stream PERIOD_MS] [--jfr-events cpu+alloc+lock+park+io]
 *        [--samples FILE] [--seconds N]
 * </pre>
 *
 * Request threads are a Tomcat {@code StandardThreadExecutor} named {@code req-N} (platform), or
 * Tomcat's virtual threads ({@code --virtual}, JDK 21+, carriers {@code ForkJoinPool-1-worker-N}),
 * so that the harness can tell them apart in {@code /proc/PID/task/*}{@code /comm}.
 */
public final class BenchServer {
    private BenchServer() {}

    static final AtomicLong SERVED = new AtomicLong();

    public static void main(String[] args) throws Exception {
        String filter = "off";
        boolean virtual = false;
        long streamPeriodMs = 0;
        String streamEvents = "cpu";
        String samplesFile = null;
        long seconds = 600;
        long phaseMs = 2000;
        String phaseGroups = "";
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--filter": filter = args[++i]; break;
                case "--virtual": virtual = true; break;
                case "--jfr-stream": streamPeriodMs = Long.parseLong(args[++i]); break;
                case "--jfr-events": streamEvents = args[++i]; break;
                case "--samples": samplesFile = args[++i]; break;
                case "--seconds": seconds = Long.parseLong(args[++i]); break;
                case "--phase-ms": phaseMs = Long.parseLong(args[++i]); break;
                case "--phase-groups": phaseGroups = args[++i]; break;
                default: throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        SampleCounter samples = streamPeriodMs > 0 ? SampleCounter.start(streamPeriodMs, streamEvents) : null;

        Tomcat tomcat = new Tomcat();
        File base = Files.createTempDirectory("jfrctx-bench-tomcat").toFile();
        tomcat.setBaseDir(base.getAbsolutePath());
        Connector connector = new Connector("HTTP/1.1");
        connector.setProperty("address", "127.0.0.1");
        connector.setPort(0);
        connector.setProperty("maxKeepAliveRequests", "-1");
        if (virtual) {
            connector.setProperty("useVirtualThreads", "true");
        } else {
            StandardThreadExecutor executor = new StandardThreadExecutor();
            executor.setName("req");
            executor.setNamePrefix("req-");
            executor.setMaxThreads(200);
            executor.setMinSpareThreads(10);
            tomcat.getService().addExecutor(executor);
            connector.getProtocolHandler().setExecutor(executor);
        }
        tomcat.setConnector(connector);
        tomcat.getHost().setAutoDeploy(false);

        Context app = tomcat.addContext("", null);
        Tomcat.addServlet(app, "bench", new BenchServlet(filter)).addMapping("/app/*");
        FilterDef def = new FilterDef();
        def.setFilterName("context");
        BenchFilter contexts = new BenchFilter(filter);
        def.setFilter(contexts);
        app.addFilterDef(def);
        FilterMap map = new FilterMap();
        map.setFilterName("context");
        map.addURLPattern("/app/*");
        app.addFilterMap(map);

        CountDownLatch stop = new CountDownLatch(1);
        Phases phases = filter.contains("/")
                ? Phases.start(contexts, filter.split("/"), phaseMs, new ThreadGroups(phaseGroups)) : null;
        Tomcat.addServlet(app, "stats", new StatsServlet(samples, phases)).addMapping("/admin/stats");
        Tomcat.addServlet(app, "stop", new StopServlet(stop)).addMapping("/admin/stop");

        tomcat.start();
        System.out.println("listening on 127.0.0.1:" + connector.getLocalPort() + " filter=" + filter
                + (virtual ? " virtual" : " platform") + BenchFilter.describe(filter));
        System.out.flush();
        stop.await(seconds, TimeUnit.SECONDS);
        if (samples != null) {
            samples.settle(); // the window's last samples are still in flight
        }
        tomcat.stop();
        tomcat.destroy();
        BenchServlet.shutdown();
        if (samples != null) {
            samples.close(samplesFile);
        }
        System.out.println("stopped");
    }

    /** Execution samples of an in-process JFR {@code RecordingStream} (the "JFR alone" baseline). */
    static final class SampleCounter {
        private final jdk.jfr.consumer.RecordingStream stream;
        private final long[] times = new long[1 << 20]; // epoch ns of each sample
        private int n;
        /** Flush segments the stream has dispatched completely ({@code onFlush}). */
        private long flushed;

        private SampleCounter(long periodMs, String events) {
            stream = new jdk.jfr.consumer.RecordingStream();
            for (String preset : events.split("\\+")) {
                enable(stream, preset, periodMs);
            }
            stream.onEvent("jdk.ExecutionSample", e -> record(e.getStartTime()));
            stream.onFlush(this::flushed);
            stream.startAsync();
        }

        /**
         * The events of one of the agent's presets, with the settings the agent gives them (its
         * event table, {@code agent/core/events/table.rs}: the period for execution samples,
         * JFR's {@code profile.jfc} throttle for allocation samples, a 10 ms threshold for the
         * waits), so that "JFR alone" records what jfrctx records. {@code tests/it/bench_baseline.rs}
         * reads this method and fails when it and the table differ.
         */
        private static void enable(jdk.jfr.consumer.RecordingStream stream, String preset, long periodMs) {
            Duration wait = Duration.ofMillis(10);
            switch (preset) {
                case "cpu":
                    stream.enable("jdk.ExecutionSample").withPeriod(Duration.ofMillis(periodMs));
                    break;
                case "alloc":
                    stream.enable("jdk.ObjectAllocationSample").with("throttle", "300/s");
                    break;
                case "lock":
                    stream.enable("jdk.JavaMonitorEnter").withThreshold(wait);
                    stream.enable("jdk.JavaMonitorWait").withThreshold(wait);
                    break;
                case "park":
                    stream.enable("jdk.ThreadPark").withThreshold(wait);
                    break;
                case "io":
                    for (String e : new String[] {"jdk.SocketRead", "jdk.SocketWrite", "jdk.FileRead", "jdk.FileWrite"}) {
                        stream.enable(e).withThreshold(wait);
                    }
                    break;
                default:
                    throw new IllegalArgumentException("--jfr-events: unknown preset '" + preset
                            + "' (cpu, alloc, lock, park, io)");
            }
        }

        static SampleCounter start(long periodMs, String events) {
            return new SampleCounter(periodMs, events);
        }

        private synchronized void record(Instant t) {
            if (n < times.length) {
                times[n++] = t.getEpochSecond() * 1_000_000_000L + t.getNano();
            }
        }

        synchronized int count() {
            return n;
        }

        private synchronized void flushed() {
            flushed++;
            notifyAll();
        }

        /**
         * Waits until the samples taken before this call have been dispatched: two flushes
         * completed after it (the first may have begun before it; JFR flushes a stream about once
         * a second), at most 5 s. {@code RecordingStream.close()} discards what it has not
         * dispatched: without this wait the last sample counted for JFR alone was 0.72 s before
         * the window's end (≈ 3.5 % of a 20 s window lost), while the agent's final flush counts
         * every sample for jfrctx.
         */
        synchronized void settle() throws InterruptedException {
            long target = flushed + 2;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (flushed < target) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    System.err.println("bench: no JFR flush within 5 s; the sample count may be short");
                    return;
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
        }

        void close(String file) throws IOException {
            stream.close();
            if (file == null) {
                return;
            }
            StringBuilder sb = new StringBuilder();
            synchronized (this) {
                for (int i = 0; i < n; i++) {
                    sb.append(times[i]).append('\n');
                }
            }
            Files.writeString(Path.of(file), sb.toString());
        }
    }

    /** One JSON line: clocks, GC, JIT, requests, samples received so far. */
    private static final class StatsServlet extends HttpServlet {
        private static final long serialVersionUID = 1L;
        private final transient SampleCounter samples;
        private final transient Phases phases;

        StatsServlet(SampleCounter samples, Phases phases) {
            this.samples = samples;
            this.phases = phases;
        }

        @Override
        protected void doGet(HttpServletRequest request, HttpServletResponse response)
                throws IOException {
            long gcCount = 0;
            long gcMs = 0;
            for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
                gcCount += Math.max(0, gc.getCollectionCount());
                gcMs += Math.max(0, gc.getCollectionTime());
            }
            CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
            Instant now = Instant.now();
            String line = "{\"nano\":" + System.nanoTime()
                    + ",\"epoch_ns\":" + (now.getEpochSecond() * 1_000_000_000L + now.getNano())
                    + ",\"gc_count\":" + gcCount + ",\"gc_ms\":" + gcMs
                    + ",\"jit_ms\":" + (jit == null ? -1 : jit.getTotalCompilationTime())
                    + ",\"served\":" + SERVED.get()
                    + ",\"loop_ns\":" + BenchServlet.LOOP_NS.sum() + ",\"loop_calls\":" + BenchServlet.LOOP_CALLS.sum()
                    + ",\"stream_samples\":" + (samples == null ? -1 : samples.count())
                    + (ContextTimes.ENABLED ? ",\"context_ns\":" + ContextTimes.json()
                            + ",\"open_ns\":" + ContextTimes.openings() : "")
                    + (phases == null ? "" : ",\"phases\":" + phases.json()) + "}\n";
            byte[] body = line.getBytes(StandardCharsets.US_ASCII);
            response.setContentType("application/json");
            response.setContentLength(body.length);
            response.getOutputStream().write(body);
        }
    }

    /** {@code /admin/stop}: answers, then lets {@code main} stop the server. */
    private static final class StopServlet extends HttpServlet {
        private static final long serialVersionUID = 1L;
        private final transient CountDownLatch stop;

        StopServlet(CountDownLatch stop) {
            this.stop = stop;
        }

        @Override
        protected void doGet(HttpServletRequest request, HttpServletResponse response)
                throws IOException {
            response.setContentType("text/plain");
            PrintWriter w = response.getWriter();
            w.println("stopping");
            response.flushBuffer();
            stop.countDown();
        }
    }
}
