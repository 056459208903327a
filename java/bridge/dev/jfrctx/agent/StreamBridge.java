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
    private final Calibrator calibrator = new Calibrator();
    private volatile boolean ended;
    /** Flushes dispatched so far; written by the stream thread only. */
    private volatile long flushes;
    private boolean deliveryFailed;
    private boolean encodeFailed;

    private StreamBridge() {}

    /** Starts the stream. Returns null on success, else a one-line reason. */
    public static synchronized String start(String config) {
        if (instance != null) {
            return "stream already started";
        }
        StreamBridge b = new StreamBridge();
        try {
            b.configure(config);
            b.stream.onEvent(new Handler(b));
            b.stream.onFlush(new Flusher(b));
            b.stream.onClose(new Closer(b));
            b.stream.onError(new ErrorHandler(b));
            Thread runner = new Thread(new Runner(b.stream), "jfrctx-stream");
            runner.setDaemon(true);
            runner.start();
        } catch (Throwable t) {
            b.stream.close();
            return t.toString();
        }
        instance = b;
        b.calibrator.start();
        return null;
    }

    /**
     * Stops the stream and delivers what it produced: on JDK 20+ {@code RecordingStream.stop()}
     * flushes every event; on 17 the stream is closed. Waits at most {@code timeoutMillis}.
     */
    public static String stop(long timeoutMillis) {
        StreamBridge b;
        synchronized (StreamBridge.class) {
            b = instance;
        }
        if (b == null) {
            return null;
        }
        b.calibrator.halt();
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
        b.deliver(true, problem);
        return problem;
    }

    /** Each config line is {@code NAME|key=value|key=value...}: enable NAME with those settings. */
    private void configure(String config) {
        stream.enable(CALIBRATION).withThreshold(Duration.ZERO);
        for (String line : config.split("\n")) {
            if (line.isBlank()) {
                continue;
            }
            String[] parts = line.split("\\|");
            jdk.jfr.EventSettings es = stream.enable(parts[0].trim());
            for (int i = 1; i < parts.length; i++) {
                int eq = parts[i].indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("bad event setting '" + parts[i] + "' for " + parts[0]);
                }
                es.with(parts[i].substring(0, eq).trim(), parts[i].substring(eq + 1).trim());
            }
        }
    }

    private synchronized void onEvent(RecordedEvent e) {
        try {
            encoder.add(e);
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
        if (last) {
            if (ended) {
                return;
            }
            ended = true;
            encoder.end(problem == null ? "" : problem);
        }
        int n = encoder.size();
        if (n > 0) {
            try {
                Natives.deliver(encoder.buffer(), n);
            } catch (Throwable t) {
                if (!deliveryFailed) {
                    deliveryFailed = true;
                    System.err.println("jfrctx: error: cannot hand events to the agent: " + t);
                }
            }
            encoder.reset();
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
        }
    }

    private static final class Closer implements Runnable {
        private final StreamBridge b;

        Closer(StreamBridge b) {
            this.b = b;
        }

        @Override
        public void run() {
            b.deliver(true, null);
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

        Calibrator() {
            super("jfrctx-calibrator");
            setDaemon(true);
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
                }
                while (running) {
                    Thread.sleep(250);
                    for (int i = 0; i < 4; i++) {
                        CalibrationEvent.bracket();
                    }
                }
            } catch (InterruptedException stop) {
                // halted
            }
        }
    }
}
