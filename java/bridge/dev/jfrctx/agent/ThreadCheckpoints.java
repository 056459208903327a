package dev.jfrctx.agent;

/**
 * Makes HotSpot write the constants of virtual threads at each flush point, so the stream can
 * resolve the thread of their samples (JDK 21 and 25).
 *
 * <p>HotSpot writes a virtual thread's constant (id, name) lazily, the first time the thread
 * commits or gets an event in an epoch, into a buffer of its own mspace (in
 * {@code JfrThreadLocal::set_vthread_epoch} through {@code JfrCheckpointManager::write_checkpoint}).
 * Those buffers are not leases, so writing one does not signal {@code _new_checkpoint}, and a flush
 * point ({@code JfrCheckpointManager::flush_type_set}) writes the checkpoint buffers only when that
 * signal was raised since the previous one. A signal comes from a returned checkpoint lease: in
 * practice a platform thread starting or ending. With a steady pool of carriers and no platform
 * thread churn, the constants wait for a later flush or for the chunk's end while the events that
 * reference them are already streamed: the stream parser finds no such thread and
 * {@code RecordedEvent} reports the thread as null. The finished chunk file has them.
 *
 * <p>This thread raises the signal: once armed (the first sample from a virtual thread or without
 * a thread), it starts and joins an empty platform thread every {@link #INTERVAL_MILLIS} ms, whose
 * start writes its own thread checkpoint through a lease. JFR's own flush comes about once a
 * second, so each flush point finds the signal raised (at least two nudges fall between two
 * flushes) and writes every virtual-thread constant pending at that moment. A nudge costs
 * ≈ 0.35 ms of CPU on JDK 25 (≈ 0.8 ms on 17: a platform thread's start and end), so there are
 * no more of them than that needs. With {@code latency=live} the flusher calls {@link #nudge()}
 * before each forced flush. The events those threads cause elsewhere: one
 * {@code jdk.ThreadStart} and one {@code jdk.ThreadEnd} per nudge in recordings that enable them.
 */
final class ThreadCheckpoints extends Thread {
    /**
     * Between two nudges: under half of JFR's once-a-second flush interval, so that every
     * interval between two flush points holds a nudge even when one comes late.
     */
    static final long INTERVAL_MILLIS = 400;

    private static final Runnable NOTHING = () -> { };

    private static volatile boolean armed;

    private volatile boolean running = true;

    ThreadCheckpoints() {
        super("jfrctx-checkpoints");
        setDaemon(true);
    }

    /** Called by the encoder for each sample from a virtual thread or without a thread. */
    static void arm() {
        if (!armed) {
            armed = true;
        }
    }

    static boolean armed() {
        return armed;
    }

    /**
     * Starts and joins one empty platform thread when armed: its start returns a checkpoint lease,
     * which raises the signal the next flush point tests. Never throws.
     */
    static void nudge() {
        if (!armed) {
            return;
        }
        try {
            Thread t = new Thread(NOTHING, "jfrctx-checkpoint");
            t.setDaemon(true);
            t.start();
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Throwable t) {
            // Out of native threads or memory: the next flush may miss virtual-thread constants,
            // and their samples stay unknown (no_thread). Nothing else depends on it.
        }
    }

    void halt() {
        running = false;
        interrupt();
    }

    @Override
    public void run() {
        while (running) {
            try {
                Thread.sleep(INTERVAL_MILLIS);
            } catch (InterruptedException stop) {
                return;
            }
            if (running) {
                nudge();
            }
        }
    }
}
