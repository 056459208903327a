package dev.jfrctx.agent;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.function.Consumer;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingStream;

/**
 * Runs the agent's JFR {@link RecordingStream}. Started by the agent at VM start through JNI;
 * the application calls nothing. Events are encoded by {@link BatchEncoder} and handed to the
 * agent once per stream flush in a single {@link Natives#deliver} call.
 *
 * <p>Configuration is one string of lines {@code NAME|key=value|...}, one per enabled event.
 */
public final class StreamBridge {
    static final String CALIBRATION = "jfrctx.Calibration";
    private static final long DELIVER_AT = 4 << 20;
    private static StreamBridge instance;

    private final RecordingStream stream = new RecordingStream();
    private final BatchEncoder encoder = new BatchEncoder(CALIBRATION);
    private final Calibrator calibrator = new Calibrator(this);
    /** Gets virtual-thread constants written at each flush point (a JDK workaround). */
    private final ThreadCheckpoints checkpoints = new ThreadCheckpoints();
    /** The event types the agent asked for: the stream also sees other recordings' events. */
    private final Selection selection = new Selection();
    /** The real sampling periods, for events another recording may sample faster. */
    private final SamplingPeriods periods = new SamplingPeriods();
    /** The stream delivered its last batch (read by {@link LiveFlusher}). */
    volatile boolean ended;
    /** Set when the agent stops the stream at VM death: an end after that is the normal one. */
    private volatile boolean stopping;
    /** The stream's own recording (found at start), watched for being closed by someone else. */
    private volatile jdk.jfr.Recording recording;
    static final String CLOSED_BEFORE_EXIT = "its recording was closed before the JVM exit (by the "
            + "application or a JFR command); no samples are recorded from here on";
    /** Flushes dispatched so far; written by the stream thread only. */
    private volatile long flushes;
    private boolean deliveryFailed;
    private boolean encodeFailed;

    /** Problems found while configuring that do not stop the stream (one line each). */
    private static final java.util.List<String> WARNINGS = new java.util.ArrayList<>();
    /** The event types actually enabled. */
    private static final java.util.List<String> ENABLED = new java.util.ArrayList<>();
    private static LiveFlusher liveFlusher;

    private StreamBridge() {}

    /**
     * Warnings of the last {@link #start}.
     *
     * @return one warning per line, or null when there are none
     */
    public static synchronized String warnings() {
        return WARNINGS.isEmpty() ? null : String.join("\n", WARNINGS);
    }

    /**
     * Events of other recordings the stream saw and did not pass on (see {@link Selection}).
     *
     * @return their number
     */
    public static long skippedEvents() {
        StreamBridge b = current();
        if (b == null) {
            return 0;
        }
        synchronized (b) {
            return b.selection.skippedTotal();
        }
    }

    /**
     * The events of {@link #skippedEvents} by type.
     *
     * @return most frequent first, {@code "jdk.ThreadPark=1659, ..."}, or empty
     */
    public static String skippedByType() {
        StreamBridge b = current();
        if (b == null) {
            return "";
        }
        synchronized (b) {
            return b.selection.skippedByType(8);
        }
    }

    private static synchronized StreamBridge current() {
        return instance;
    }

    /**
     * The event types the last {@link #start} enabled.
     *
     * @return their names, comma-separated
     */
    public static synchronized String enabledEvents() {
        return String.join(",", ENABLED);
    }

    /**
     * Live mode: forces a JFR flush every {@code intervalMillis} so that events reach the stream
     * within tens of milliseconds instead of about a second. Uses JFR internals (the agent has
     * opened {@code jdk.jfr.internal} and, where it exists, {@code jdk.jfr.internal.util} to
     * this class's module through JNI). Returns null on success, else a one-line reason (the
     * stream then keeps JFR's default latency).
     *
     * @param intervalMillis the forced flush period, in milliseconds
     * @return null, or why live mode is unavailable
     */
    public static synchronized String startLive(long intervalMillis) {
        if (instance == null) {
            return "the stream is not running";
        }
        if (liveFlusher != null) {
            return null;
        }
        try {
            LiveFlusher f = new LiveFlusher(instance, Math.max(1, intervalMillis));
            f.flushOnce(); // fail here, not later, when an internal is missing or refuses
            f.start();
            liveFlusher = f;
            return null;
        } catch (java.lang.reflect.InvocationTargetException e) {
            return String.valueOf(e.getCause());
        } catch (Throwable t) {
            return t.toString();
        }
    }

    /**
     * Starts the stream.
     *
     * @param config the event configuration, one {@code NAME|key=value|...} line per event
     * @return null on success, else a one-line reason
     */
    public static synchronized String start(String config) {
        if (instance != null) {
            return "stream already started";
        }
        // Before the application runs: on a thread near the end of its stack, initializing the
        // definitions' classes would fail for the JVM's life (see Definitions' initializer), and
        // the ring writer's first calls would fail in the middle.
        Definitions.initialize();
        RingPool.initialize();
        try {
            RingWriter.warm();
        } catch (Throwable t) {
            // Unusable (jdk.internal.misc not exported: the agent said so): the facade finds out
            // itself and writes through buffers.
        }
        // Register the bracket event before the stream's recording starts: left to its first
        // commit, registration races with the recording's start and can leave the event
        // disabled for the whole run (seen on JDK 25 under load: every sample not_calibrated).
        try {
            jdk.jfr.FlightRecorder.register(CalibrationEvent.class);
        } catch (Throwable t) {
            return "cannot register " + CALIBRATION + ": " + t;
        }
        java.util.Set<Long> before = recordingIds();
        StreamBridge b = new StreamBridge();
        b.recording = newRecording(before);
        try {
            b.configure(config);
            jdk.jfr.FlightRecorder.addListener(b.periods);
            b.periods.poll();
            b.stream.onEvent(new Handler(b));
            b.stream.onFlush(new Flusher(b));
            b.stream.onClose(new Closer(b));
            b.stream.onError(new ErrorHandler(b));
            Thread runner = new Thread(new Runner(b.stream), "jfrctx-stream");
            runner.setDaemon(true);
            runner.start();
        } catch (Throwable t) {
            b.stream.close();
            jdk.jfr.FlightRecorder.removeListener(b.periods);
            return t.toString();
        }
        instance = b;
        b.calibrator.start();
        b.checkpoints.start();
        return null;
    }

    /**
     * Stops the stream and delivers what it produced: on JDK 20+ {@code RecordingStream.stop()}
     * flushes every event; on 17 the stream is closed. Waits at most {@code timeoutMillis}.
     *
     * @param timeoutMillis how long to wait, in milliseconds
     * @return null, or a one-line problem
     */
    public static String stop(long timeoutMillis) {
        StreamBridge b;
        synchronized (StreamBridge.class) {
            b = instance;
        }
        if (b == null) {
            return null;
        }
        b.stopping = true;
        b.calibrator.halt();
        b.checkpoints.halt();
        // A last series of brackets, spread over ~64 ms so the slope stays well conditioned,
        // travels in the final flush: a short or heavily loaded run whose recording started late
        // is still calibrated at exit.
        for (int i = 0; i < 32; i++) {
            CalibrationEvent.bracket();
            try {
                Thread.sleep(2);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        LiveFlusher live;
        synchronized (StreamBridge.class) {
            live = liveFlusher;
            liveFlusher = null;
        }
        if (live != null) {
            live.halt();
        }
        String problem = null;
        try {
            Method stop = null;
            try {
                stop = RecordingStream.class.getMethod("stop");
            } catch (NoSuchMethodException absent) {
                // JDK 17-19: no stop(); the stream ends once its recording is stopped.
            }
            long flushes = b.flushes;
            boolean drained = false;
            if (stop != null && !b.ended) {
                try {
                    stop.invoke(b.stream);
                    drained = true;
                } catch (java.lang.reflect.InvocationTargetException e) {
                    if (!(e.getCause() instanceof IllegalStateException)) {
                        throw e.getCause();
                    }
                    // Already stopped by JFR's own shutdown hook (it runs before VM death).
                }
            }
            if (!drained) {
                // The recording was stopped by JFR's shutdown hook: its last data is on disk and
                // the stream dispatches it in one more flush. Wait for that flush (or the end).
                long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
                while (!b.ended && b.flushes == flushes && System.nanoTime() < deadline) {
                    Thread.sleep(5);
                }
            }
            b.stream.close();
            b.stream.awaitTermination(Duration.ofMillis(timeoutMillis));
        } catch (Throwable t) {
            problem = t.toString();
        }
        try {
            jdk.jfr.FlightRecorder.removeListener(b.periods);
        } catch (Throwable t) {
            // Not registered, or JFR shutting down: nothing to undo.
        }
        b.deliver(true, problem);
        return problem;
    }

    /**
     * Each config line is {@code NAME|key=value|key=value...}: enable NAME with those settings. A
     * line starting with {@code ?} is the fallback of the line before it, enabled only when the
     * running JDK lacks that line's event. An event this JDK does not have is skipped with a
     * warning (see {@link #warnings()}).
     */
    private void configure(String config) {
        stream.enable(CALIBRATION).withThreshold(Duration.ZERO);
        selection.add(CALIBRATION, java.util.Map.of());
        java.util.Set<String> available = new java.util.HashSet<>();
        for (jdk.jfr.EventType t : jdk.jfr.FlightRecorder.getFlightRecorder().getEventTypes()) {
            available.add(t.getName());
        }
        String[] lines = config.split("\n");
        boolean previousEnabled = true;
        for (int li = 0; li < lines.length; li++) {
            String line = lines[li];
            if (line.isBlank()) {
                continue;
            }
            boolean fallback = line.startsWith("?");
            if (fallback) {
                if (previousEnabled) {
                    continue;
                }
                line = line.substring(1);
            }
            String[] parts = line.split("\\|");
            String name = parts[0].trim();
            boolean hasFallback = li + 1 < lines.length && lines[li + 1].startsWith("?");
            if (!available.contains(name)) {
                previousEnabled = false;
                WARNINGS.add("event " + name + " is not available on this JDK (Java "
                        + Runtime.version().feature() + "); "
                        + (hasFallback ? lines[li + 1].substring(1).split("\\|")[0].trim() + " is recorded instead"
                                : "not recorded"));
                continue;
            }
            previousEnabled = true;
            ENABLED.add(name);
            jdk.jfr.EventSettings es = stream.enable(name);
            java.util.Map<String, String> settings = new java.util.HashMap<>();
            for (int i = 1; i < parts.length; i++) {
                int eq = parts[i].indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("bad event setting '" + parts[i] + "' for " + parts[0]);
                }
                String key = parts[i].substring(0, eq).trim();
                String value = parts[i].substring(eq + 1).trim();
                es.with(key, value);
                settings.put(key, value);
            }
            selection.add(name, settings);
        }
    }

    private synchronized void onEvent(RecordedEvent e) {
        if (ended) {
            return;
        }
        try {
            Selection.Decision d = selection.accept(e);
            if (d == null) {
                return; // another recording's event type, or below the agent's threshold
            }
            long period = d.periodIndex < 0 ? 0
                    : periods.periodAt(d.periodIndex, SamplingPeriods.epochNanos(e.getStartTime()));
            encoder.add(e, period);
        } catch (RuntimeException bad) {
            if (!encodeFailed) {
                encodeFailed = true;
                System.err.println("jfrctx: warning: cannot encode a " + e.getEventType().getName()
                        + " event (skipped, further ones silently): " + bad);
            }
            return;
        }
        if (encoder.size() >= DELIVER_AT) {
            deliver(false, null);
        }
    }

    private synchronized void deliver(boolean last, String problem) {
        if (ended) {
            return;
        }
        // Every map a sample of this batch can carry was queued before that sample was taken.
        encoder.addDefinitions();
        if (last) {
            ended = true;
            encoder.end(problem == null ? "" : problem);
            Definitions.close();
        }
        int n = encoder.size();
        if (n > 0) {
            boolean delivered = false;
            try {
                Natives.deliver(encoder.buffer(), n);
                delivered = true;
            } catch (Throwable t) {
                if (!deliveryFailed) {
                    deliveryFailed = true;
                    System.err.println("jfrctx: error: cannot hand events to the agent (a batch of "
                            + encoder.events() + " events is lost; later batches are still handed "
                            + "over, further failures are not reported): " + t);
                }
            }
            if (delivered) {
                encoder.reset();
            } else {
                encoder.discard(); // its strings are defined again in the next batch
            }
        }
    }

    /**
     * Runs the stream on a daemon thread: {@code startAsync()} would use a non-daemon thread that
     * keeps the JVM from exiting.
     */
    private static final class Runner implements Runnable {
        private final RecordingStream stream;

        Runner(RecordingStream stream) {
            this.stream = stream;
        }

        @Override
        public void run() {
            try {
                stream.start();
            } catch (Throwable t) {
                System.err.println("jfrctx: error: the JFR stream stopped: " + t);
            }
        }
    }

    private static final class Handler implements Consumer<RecordedEvent> {
        private final StreamBridge b;

        Handler(StreamBridge b) {
            this.b = b;
        }

        @Override
        public void accept(RecordedEvent e) {
            b.onEvent(e);
        }
    }

    private static final class Flusher implements Runnable {
        private final StreamBridge b;

        Flusher(StreamBridge b) {
            this.b = b;
        }

        @Override
        public void run() {
            b.deliver(false, null);
            b.flushes++;
            try {
                b.periods.poll(); // settings changed on a running recording (dated now)
            } catch (RuntimeException e) {
                // JFR shutting down: the listener's figures stand.
            }
        }
    }

    private static final class Closer implements Runnable {
        private final StreamBridge b;

        Closer(StreamBridge b) {
            this.b = b;
        }

        @Override
        public void run() {
            // Ended before the agent stopped it and before the JVM began to shut down (when
            // JFR's own shutdown hook stops recordings): someone closed or stopped the recording,
            // e.g. FlightRecorder.getRecordings() -> close(), or jcmd JFR.stop. Profiling ends;
            // the agent logs this once and the application carries on.
            boolean expected = b.stopping || shuttingDown();
            b.deliver(true, expected ? null : CLOSED_BEFORE_EXIT);
        }
    }

    /**
     * Called every quarter second: JDK 20+ keep a stream whose recording was closed open (idle)
     * instead of closing it, so the end is noticed here, from the recording's state.
     */
    void watchRecording() {
        jdk.jfr.Recording r = recording;
        if (r == null || ended || stopping) {
            return;
        }
        jdk.jfr.RecordingState state = r.getState();
        if ((state == jdk.jfr.RecordingState.CLOSED || state == jdk.jfr.RecordingState.STOPPED)
                && !stopping && !shuttingDown()) {
            deliver(true, CLOSED_BEFORE_EXIT);
        }
    }

    /** Ids of the recordings that exist now (empty when JFR cannot say). */
    private static java.util.Set<Long> recordingIds() {
        java.util.Set<Long> ids = new java.util.HashSet<>();
        try {
            for (jdk.jfr.Recording r : jdk.jfr.FlightRecorder.getFlightRecorder().getRecordings()) {
                ids.add(r.getId());
            }
        } catch (Throwable t) {
            // Not watched then.
        }
        return ids;
    }

    /** The one recording created since {@code before} (the new stream's), or null. */
    private static jdk.jfr.Recording newRecording(java.util.Set<Long> before) {
        jdk.jfr.Recording found = null;
        try {
            for (jdk.jfr.Recording r : jdk.jfr.FlightRecorder.getFlightRecorder().getRecordings()) {
                if (!before.contains(r.getId())) {
                    if (found != null) {
                        return null; // ambiguous: someone else created one at the same time
                    }
                    found = r;
                }
            }
        } catch (Throwable t) {
            return null;
        }
        return found;
    }

    /** Whether the JVM is running its shutdown hooks (hooks can no longer be added then). */
    static boolean shuttingDown() {
        try {
            Thread probe = new Thread("jfrctx-shutdown-probe");
            Runtime.getRuntime().addShutdownHook(probe);
            Runtime.getRuntime().removeShutdownHook(probe);
            return false;
        } catch (IllegalStateException shutdownInProgress) {
            return true;
        } catch (Throwable other) {
            return false;
        }
    }

    private static final class ErrorHandler implements Consumer<Throwable> {
        private final StreamBridge b;

        ErrorHandler(StreamBridge b) {
            this.b = b;
        }

        @Override
        public void accept(Throwable t) {
            b.deliver(true, "stream failed: " + t);
        }
    }

    /**
     * Commits calibration brackets: one per millisecond for the first two seconds (those committed
     * before the stream's recording is running are simply not recorded), then a few every quarter
     * second.
     */
    private static final class Calibrator extends Thread {
        private volatile boolean running = true;
        private final StreamBridge owner;

        Calibrator(StreamBridge owner) {
            super("jfrctx-calibrator");
            setDaemon(true);
            this.owner = owner;
        }

        void halt() {
            running = false;
            interrupt();
        }

        @Override
        public void run() {
            try {
                for (int i = 0; i < 2000 && running; i++) {
                    CalibrationEvent.bracket();
                    Thread.sleep(1);
                    if (i % 250 == 249) {
                        owner.watchRecording();
                    }
                }
                while (running) {
                    Thread.sleep(250);
                    for (int i = 0; i < 4; i++) {
                        CalibrationEvent.bracket();
                    }
                    owner.watchRecording();
                }
            } catch (InterruptedException stop) {
                // halted
            }
        }
    }
}
