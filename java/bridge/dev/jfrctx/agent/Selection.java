package dev.jfrctx.agent;

import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.TreeMap;
import jdk.jfr.EventType;
import jdk.jfr.consumer.RecordedEvent;

/**
 * The event types the agent enabled, and what the stream must let through. A
 * {@code RecordingStream} reads the chunks that every running recording writes, so beside another
 * recording it dispatches every event type that recording enables too, and an event the agent
 * enabled with a threshold also arrives below it when the other recording's threshold is lower.
 * Only the agent's own event types (and {@code jfrctx.Calibration}) above its own thresholds are
 * encoded; the rest are counted by type (the exit summary's {@code not_selected=}). Not
 * thread-safe: the bridge serialises access.
 */
final class Selection {
    /** How one event type is treated, decided once per type. */
    static final class Decision {
        final boolean selected;
        /** The agent's threshold for this event in ns (0: none). */
        final long thresholdNanos;
        /** Index in {@link SamplingPeriods#EVENTS}, or -1. */
        final int periodIndex;

        Decision(boolean selected, long thresholdNanos, int periodIndex) {
            this.selected = selected;
            this.thresholdNanos = thresholdNanos;
            this.periodIndex = periodIndex;
        }
    }

    private final Map<String, Long> thresholds = new HashMap<>();
    private final Map<EventType, Decision> decisions = new IdentityHashMap<>();
    /** Events not passed on, by type (with " below threshold" for the second kind). */
    private final Map<String, long[]> skipped = new TreeMap<>();
    private long skippedTotal;

    /** Selects {@code name}, with the settings the agent enabled it with. */
    void add(String name, Map<String, String> settings) {
        long threshold = timespanNanos(settings.get("threshold"));
        thresholds.put(name, threshold > 0 ? threshold : 0L);
    }

    /** How {@code e} is passed to the agent, or null (counted) when it is not. */
    Decision accept(RecordedEvent e) {
        Decision d = decision(e.getEventType());
        if (!d.selected) {
            skip(e.getEventType().getName());
            return null;
        }
        if (d.thresholdNanos > 0 && e.getDuration().toNanos() < d.thresholdNanos) {
            skip(e.getEventType().getName() + " below threshold");
            return null;
        }
        return d;
    }

    Decision decision(EventType t) {
        Decision d = decisions.get(t);
        if (d == null) {
            Long threshold = thresholds.get(t.getName());
            boolean timed = t.getField("duration") != null;
            d = new Decision(threshold != null, threshold != null && timed ? threshold : 0L,
                    SamplingPeriods.indexOf(t.getName()));
            decisions.put(t, d);
        }
        return d;
    }

    private void skip(String what) {
        skippedTotal++;
        skipped.computeIfAbsent(what, k -> new long[1])[0]++;
    }

    long skippedTotal() {
        return skippedTotal;
    }

    /** The skipped events by type, most frequent first, at most {@code limit}: "jdk.X=12, ...". */
    String skippedByType(int limit) {
        StringBuilder sb = new StringBuilder();
        skipped.entrySet().stream()
                .sorted((a, b) -> Long.compare(b.getValue()[0], a.getValue()[0]))
                .limit(limit)
                .forEach(e -> sb.append(sb.length() == 0 ? "" : ", ").append(e.getKey()).append('=')
                        .append(e.getValue()[0]));
        if (skipped.size() > limit) {
            sb.append(", ... (").append(skipped.size()).append(" types)");
        }
        return sb.toString();
    }

    /**
     * A JFR timespan ({@code 20 ms}, {@code 10ms}, {@code 0.5 ms}, {@code 1 s}) in ns;
     * {@code infinity}: {@link Long#MAX_VALUE}; -1 when absent or not a timespan.
     */
    static long timespanNanos(String text) {
        if (text == null) {
            return -1;
        }
        String v = text.trim();
        if (v.equals("infinity")) {
            return Long.MAX_VALUE;
        }
        int i = 0;
        while (i < v.length() && (Character.isDigit(v.charAt(i)) || v.charAt(i) == '.')) {
            i++;
        }
        double unit;
        switch (v.substring(i).trim()) {
            case "ns": unit = 1; break;
            case "us": unit = 1e3; break;
            case "ms": unit = 1e6; break;
            case "s": unit = 1e9; break;
            case "m": unit = 60e9; break;
            case "h": unit = 3600e9; break;
            case "d": unit = 86400e9; break;
            default: return -1;
        }
        try {
            double n = Double.parseDouble(v.substring(0, i));
            double ns = n * unit;
            return ns >= Long.MAX_VALUE ? Long.MAX_VALUE : (long) ns;
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
