package dev.jfrctx;

import java.util.List;
import java.util.Map;

/**
 * One sample joined to its thread's context, as delivered to {@link Samples} listeners: the same
 * data as one JSON line of the {@code jsonl} sink. Immutable.
 */
public final class ContextualSample {

    /** One stack frame. */
    public static final class Frame {
        private final String method;
        private final int line;

        Frame(String method, int line) {
            this.method = method;
            this.line = line;
        }

        /**
         * Returns the method as {@code pkg.Class.method}.
         *
         * @return the method
         */
        public String method() {
            return method;
        }

        /**
         * Returns the source line, -1 when unknown.
         *
         * @return the line
         */
        public int line() {
            return line;
        }

        @Override
        public String toString() {
            return method + ":" + line;
        }
    }

    private final String eventName;
    private final long timeNanos;
    private final long threadId;
    private final String threadName;
    private final boolean virtual;
    private final Map<String, String> context;
    private final String unknownReason;
    private final List<Frame> frames;

    ContextualSample(String eventName, long timeNanos, long threadId, String threadName,
            boolean virtual, Map<String, String> context, String unknownReason, List<Frame> frames) {
        this.eventName = eventName;
        this.timeNanos = timeNanos;
        this.threadId = threadId;
        this.threadName = threadName;
        this.virtual = virtual;
        this.context = context;
        this.unknownReason = unknownReason;
        this.frames = frames;
    }

    /**
     * Returns the JFR event type name, e.g. {@code jdk.ExecutionSample}.
     *
     * @return the event name
     */
    public String eventName() {
        return eventName;
    }

    /**
     * Returns when the sample was taken, on the {@link System#nanoTime()} scale.
     *
     * @return the time in nanoseconds
     */
    public long timeNanos() {
        return timeNanos;
    }

    /**
     * Returns the sampled thread's Java id ({@code Thread.getId()}), -1 when JFR gave no thread.
     *
     * @return the thread id
     */
    public long threadId() {
        return threadId;
    }

    /**
     * Returns the sampled thread's name ("" when unknown).
     *
     * @return the name
     */
    public String threadName() {
        return threadName;
    }

    /**
     * Returns whether the sampled thread is virtual.
     *
     * @return true for a virtual thread
     */
    public boolean isVirtual() {
        return virtual;
    }

    /**
     * Returns the context the thread had when sampled, as an unmodifiable map sorted by key (empty
     * when none was installed), or null when the agent could not decide it (see
     * {@link #unknownReason()}).
     *
     * @return the context, or null when unknown
     */
    public Map<String, String> context() {
        return context;
    }

    /**
     * Returns why the context is unknown ({@code no_thread}, {@code not_calibrated},
     * {@code history_expired}, {@code log_overflow}, {@code in_flight}, {@code context_released},
     * {@code carrier_transition}),
     * or null when it is known.
     *
     * @return the reason, or null
     */
    public String unknownReason() {
        return unknownReason;
    }

    /**
     * Returns the stack, leaf first (unmodifiable).
     *
     * @return the frames
     */
    public List<Frame> frames() {
        return frames;
    }

    @Override
    public String toString() {
        return eventName + "@" + timeNanos + " thread=" + threadId + " (" + threadName + ")"
                + " context=" + (context != null ? context : "unknown:" + unknownReason)
                + " frames=" + frames.size();
    }
}
