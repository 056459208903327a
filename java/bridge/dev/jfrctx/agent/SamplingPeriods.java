package dev.jfrctx.agent;

import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import jdk.jfr.FlightRecorder;
import jdk.jfr.FlightRecorderListener;
import jdk.jfr.Recording;
import jdk.jfr.RecordingState;

/**
 * The period at which the JVM really samples {@code jdk.ExecutionSample} and
 * {@code jdk.NativeMethodSample}: JFR combines the settings of every running recording that
 * enables an event, and for a period that is the shortest one ({@code PeriodSetting.combine}),
 * truncated to whole milliseconds, at least 1 ms ({@code PeriodSetting.setValue}). So beside
 * another recording ({@code -XX:StartFlightRecording}, {@code jcmd JFR.start}, an application's
 * own) the agent's samples may come faster than its {@code period=}.
 *
 * <p>Each recording contributes segments {@code [from, to)} of wall-clock time (JFR's own
 * {@link Recording#getStartTime()}/{@link Recording#getStopTime()}, the instants of the chunk
 * rotations at which JFR applied the new settings) with the periods its settings give while it
 * runs. A {@link FlightRecorderListener} sees every start and stop as it happens; the stream
 * thread also polls {@link FlightRecorder#getRecordings()} at each flush, which catches settings
 * changed on a running recording (their change is dated at the poll). The period of one sample
 * is the combination over the segments covering its start time. Thread-safe; this object's lock
 * is never held while calling into JFR (see {@link #recordingStateChanged}).
 */
final class SamplingPeriods implements FlightRecorderListener {
    /** The period-driven sampling events, by index. */
    static final String[] EVENTS = {"jdk.ExecutionSample", "jdk.NativeMethodSample"};
    /** Segments that ended longer ago than this are forgotten (samples arrive within seconds). */
    private static final long KEEP_NANOS = 120_000_000_000L;

    private static final class Segment {
        final long from;
        long to = Long.MAX_VALUE;
        /** Per event of {@link #EVENTS}: the period in ns while the recording runs, 0 if off. */
        final long[] periods;

        Segment(long from, long[] periods) {
            this.from = from;
            this.periods = periods;
        }
    }

    /** The shortest time between two polls (start and stop are seen by the listener at once). */
    private static final long POLL_NANOS = 250_000_000L;

    private final Map<Long, List<Segment>> recordings = new HashMap<>();
    /** Poll pacing; only the stream thread polls. */
    private boolean polled;
    private long lastPoll;

    /** Index of {@code name} in {@link #EVENTS}, or -1. */
    static int indexOf(String name) {
        for (int i = 0; i < EVENTS.length; i++) {
            if (EVENTS[i].equals(name)) {
                return i;
            }
        }
        return -1;
    }

    /** The sampling period of event {@code index} at {@code epochNanos}, in ns; 0 if unknown. */
    synchronized long periodAt(int index, long epochNanos) {
        long min = Long.MAX_VALUE;
        for (List<Segment> segments : recordings.values()) {
            for (Segment s : segments) {
                long p = s.periods[index];
                if (p > 0 && s.from <= epochNanos && epochNanos < s.to && p < min) {
                    min = p;
                }
            }
        }
        if (min == Long.MAX_VALUE) {
            return 0;
        }
        return Math.max(1, min / 1_000_000) * 1_000_000;
    }

    /** What one recording says now, read without holding this object's lock. */
    private static final class Snapshot {
        final long id;
        final RecordingState state;
        final Instant start;
        final Instant stop;
        final long[] periods;

        Snapshot(Recording r) {
            id = r.getId();
            state = r.getState();
            start = r.getStartTime();
            stop = r.getStopTime();
            periods = state == RecordingState.RUNNING ? periods(r.getSettings()) : null;
        }
    }

    /**
     * Called by JFR on the thread that starts or stops a recording, possibly while it holds
     * JFR's recorder lock (JFR's shutdown hook stops recordings that way). So JFR is read first
     * and this object's lock is taken only for the bookkeeping: never the other way round, which
     * would deadlock against {@link #poll()}.
     */
    @Override
    public void recordingStateChanged(Recording r) {
        try {
            Snapshot s = new Snapshot(r);
            synchronized (this) {
                update(s, nowNanos());
            }
        } catch (RuntimeException e) {
            // A recording closed meanwhile: the next poll catches up.
        }
    }

    /**
     * Reads every recording's state and settings (the stream thread, at start and at flushes, at
     * most every {@link #POLL_NANOS}). JFR is read before this object's lock is taken.
     */
    void poll() {
        long tick = System.nanoTime();
        if (polled && tick - lastPoll < POLL_NANOS) {
            return;
        }
        polled = true;
        lastPoll = tick;
        List<Snapshot> all = new ArrayList<>();
        for (Recording r : FlightRecorder.getFlightRecorder().getRecordings()) {
            all.add(new Snapshot(r));
        }
        long now = nowNanos();
        synchronized (this) {
            Set<Long> present = new HashSet<>();
            for (Snapshot s : all) {
                present.add(s.id);
                update(s, now);
            }
            for (Iterator<Map.Entry<Long, List<Segment>>> it = recordings.entrySet().iterator(); it.hasNext();) {
                Map.Entry<Long, List<Segment>> e = it.next();
                List<Segment> segments = e.getValue();
                Segment last = segments.get(segments.size() - 1);
                if (!present.contains(e.getKey()) && last.to == Long.MAX_VALUE) {
                    last.to = now; // closed without a notification we saw
                }
                segments.removeIf(seg -> seg.to < now - KEEP_NANOS);
                if (segments.isEmpty()) {
                    it.remove();
                }
            }
        }
    }

    /** Applies one recording's state; the caller holds this object's lock. */
    private void update(Snapshot r, long now) {
        List<Segment> segments = recordings.get(r.id);
        Segment last = segments == null ? null : segments.get(segments.size() - 1);
        if (r.state == RecordingState.RUNNING) {
            if (last == null) {
                segments = new ArrayList<>(2);
                segments.add(new Segment(r.start != null ? epochNanos(r.start) : now, r.periods));
                recordings.put(r.id, segments);
            } else if (last.to == Long.MAX_VALUE && !java.util.Arrays.equals(last.periods, r.periods)) {
                last.to = now;
                segments.add(new Segment(now, r.periods));
            }
        } else if ((r.state == RecordingState.STOPPED || r.state == RecordingState.CLOSED)
                && last != null && last.to == Long.MAX_VALUE) {
            last.to = r.stop != null ? Math.min(epochNanos(r.stop), now) : now;
        }
    }

    /** Per event of {@link #EVENTS}: its period in a recording's settings, 0 when not enabled. */
    static long[] periods(Map<String, String> settings) {
        long[] out = new long[EVENTS.length];
        for (int i = 0; i < EVENTS.length; i++) {
            if ("true".equals(settings.get(EVENTS[i] + "#enabled"))) {
                long ns = Selection.timespanNanos(settings.get(EVENTS[i] + "#period"));
                out[i] = ns > 0 && ns != Long.MAX_VALUE ? ns : 0;
            }
        }
        return out;
    }

    static long epochNanos(Instant t) {
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }

    private static long nowNanos() {
        return epochNanos(Instant.now());
    }
}
