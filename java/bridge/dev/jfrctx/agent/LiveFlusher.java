package dev.jfrctx.agent;

import java.lang.reflect.Method;

/**
 * Forces JFR flushes: {@code MetadataRepository.getInstance().flush()} writes the thread
 * buffers to the chunk (a flush point, as JFR's own once-a-second flush does), under the
 * {@code PlatformRecorder} lock as JFR itself takes it around chunk rotation (JDK 25's
 * {@code PlatformRecorder.flush()} is exactly that); then {@code Utils.notifyFlush()}
 * ({@code jdk.jfr.internal.Utils} on 17/21, {@code jdk.jfr.internal.util.Utils} on 25) wakes
 * the stream's reader, which otherwise sleeps up to a second.
 */
final class LiveFlusher extends Thread {
    private final StreamBridge bridge;
    private final long intervalMillis;
    private final Object recorder;
    private final Object repository;
    private final Method flush;
    private final Method notifyFlush;
    private volatile boolean running = true;

    LiveFlusher(StreamBridge bridge, long intervalMillis) throws Exception {
        super("jfrctx-flusher");
        setDaemon(true);
        this.bridge = bridge;
        this.intervalMillis = intervalMillis;
        Class<?> access = Class.forName("jdk.jfr.internal.PrivateAccess");
        Method getAccess = access.getMethod("getInstance");
        getAccess.setAccessible(true);
        Method getRecorder = access.getMethod("getPlatformRecorder");
        getRecorder.setAccessible(true);
        recorder = getRecorder.invoke(getAccess.invoke(null));
        Class<?> repo = Class.forName("jdk.jfr.internal.MetadataRepository");
        Method getRepo = repo.getMethod("getInstance");
        getRepo.setAccessible(true);
        repository = getRepo.invoke(null);
        flush = repo.getMethod("flush");
        flush.setAccessible(true);
        Class<?> utils;
        try {
            utils = Class.forName("jdk.jfr.internal.util.Utils"); // JDK 22+
        } catch (ClassNotFoundException e) {
            utils = Class.forName("jdk.jfr.internal.Utils"); // JDK 17-21
        }
        notifyFlush = utils.getMethod("notifyFlush");
        notifyFlush.setAccessible(true);
    }

    void flushOnce() throws Exception {
        synchronized (recorder) {
            flush.invoke(repository);
        }
        notifyFlush.invoke(null);
    }

    void halt() {
        running = false;
        interrupt();
        try {
            join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void run() {
        try {
            while (running && !bridge.ended) {
                Thread.sleep(intervalMillis);
                if (running && !bridge.ended) {
                    ThreadCheckpoints.nudge(); // virtual-thread constants into this flush
                    flushOnce();
                }
            }
        } catch (InterruptedException stop) {
            // halted
        } catch (Throwable t) {
            System.err.println("jfrctx: warning: live mode stopped (JFR's default latency from now on): "
                    + (t instanceof java.lang.reflect.InvocationTargetException ? t.getCause() : t));
        }
    }
}
