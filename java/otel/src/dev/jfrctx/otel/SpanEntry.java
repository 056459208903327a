package dev.jfrctx.otel;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.trace.ReadableSpan;

/**
 * What one local span puts on a thread while a Context holding it is current: {@code trace_id},
 * {@code span_id} (both absent with {@link SpanIds#NONE}) and the chosen attributes of its local
 * root span, as a facade builder built once and reused by every attach (the facade caches the
 * context id per builder and installed context, so a later attach costs no allocation and no
 * call into the agent).
 *
 * <p>The root's attributes may be set after the first attach (instrumentations set
 * {@code http.route} once the framework has matched the request). Until every chosen attribute
 * was seen (or the root ended) each attach reads them again, once each and without allocating,
 * and a changed value makes a new builder from what was read; after that the builder is final.
 */
final class SpanEntry {

    private static final RecordingContextKey TRACE_ID = RecordingContextKey.forName(RootAttributes.TRACE_ID);
    private static final RecordingContextKey SPAN_ID = RecordingContextKey.forName(RootAttributes.SPAN_ID);

    private static final String HTTP_ROUTE = "http.route";

    /** Null with {@link SpanIds#NONE}, as {@link #spanId}. */
    private final String traceId;
    private final String spanId;
    /** The local root span whose attributes are read; null when unknown. */
    private final ReadableSpan root;
    private final RootAttributes config;

    /** Published immutable (never changed after publication), as the facade requires of shared builders. */
    private volatile RecordingContext.Builder builder;
    /** The attribute values {@link #builder} holds (null where absent). */
    private volatile String[] values;
    /** Every chosen attribute was present, or the root ended: {@link #builder} is final. */
    private volatile boolean settled;

    SpanEntry(String traceId, String spanId, ReadableSpan root, RootAttributes config) {
        this.traceId = traceId;
        this.spanId = spanId;
        this.root = root;
        this.config = config;
        this.settled = root == null || config.size() == 0;
    }

    /**
     * The builder to build on attach; refreshed while the root's attributes are unsettled. Null
     * when there is nothing to record (no ids, and none of the root's attributes present yet).
     */
    RecordingContext.Builder builder() {
        RecordingContext.Builder b = builder;
        if (b != null && settled) {
            return b;
        }
        return refresh(b);
    }

    private RecordingContext.Builder refresh(RecordingContext.Builder current) {
        String[] old = values; // not null once a builder was published (written before it)
        int n = config.size();
        // The values read now; null while they equal the old ones (then nothing is allocated).
        String[] now = null;
        boolean all = true;
        boolean any = false;
        for (int i = 0; i < n && root != null; i++) {
            String was = old == null ? null : old[i];
            String v = value(root, config.attributes.get(i), was);
            if (v == null) {
                all = false;
            } else {
                any = true;
            }
            if (now == null && !same(v, was)) {
                now = new String[n];
                if (old != null) {
                    System.arraycopy(old, 0, now, 0, i);
                }
            }
            if (now != null) {
                now[i] = v;
            }
        }
        if (traceId == null && !any) {
            return null; // no ids and no attribute yet: nothing to record, nothing published
        }
        if (now == null && current != null) {
            if (all || root.hasEnded()) {
                settled = true;
            }
            return current;
        }
        if (now == null) {
            now = new String[n]; // the first builder, with nothing read (the ids only)
        }
        RecordingContext.Builder b = traceId == null ? null
                : RecordingContext.where(TRACE_ID, traceId).where(SPAN_ID, spanId);
        for (int i = 0; i < n; i++) {
            if (now[i] != null) {
                RecordingContextKey key = config.keys.get(i);
                b = b == null ? RecordingContext.where(key, now[i]) : b.where(key, now[i]);
            }
        }
        values = now;
        builder = b;
        if (root == null || all || root.hasEnded()) {
            settled = true;
        }
        return b;
    }

    /**
     * The root's value of {@code key}; {@code old} (the value held so far) is returned as is when
     * unchanged, so that a check allocates nothing.
     */
    @SuppressWarnings("unchecked")
    private static String value(ReadableSpan span, AttributeKey<?> key, String old) {
        Object v = span.getAttribute((AttributeKey<Object>) key);
        if (v == null) {
            return key.getKey().equals(HTTP_ROUTE) ? routeFromName(span, old) : null;
        }
        String s = v.toString();
        if (s.isEmpty()) {
            return null;
        }
        return s.length() <= RecordingContext.MAX_VALUE_LENGTH ? s : s.substring(0, RecordingContext.MAX_VALUE_LENGTH);
    }

    /**
     * OpenTelemetry's HTTP instrumentations add {@code http.route} to the server span only when it
     * ends; while the request runs, the route is in the span's name, {@code "METHOD ROUTE"} (the
     * semantic conventions' server span name once the route is known). A SERVER root named so
     * gives that route.
     */
    private static String routeFromName(ReadableSpan span, String old) {
        if (span.getKind() != SpanKind.SERVER) {
            return null;
        }
        String name = span.getName();
        int sp = name.indexOf(' ');
        if (sp <= 0 || sp + 1 >= name.length() || name.charAt(sp + 1) != '/' || name.indexOf(' ', sp + 1) >= 0) {
            return null;
        }
        int len = name.length() - sp - 1;
        if (old != null && old.length() == len && name.regionMatches(sp + 1, old, 0, len)) {
            return old;
        }
        return name.substring(sp + 1, sp + 1 + Math.min(len, RecordingContext.MAX_VALUE_LENGTH));
    }

    private static boolean same(String a, String b) {
        return a == null ? b == null : a.equals(b);
    }

    String spanId() {
        return spanId;
    }

    String traceId() {
        return traceId;
    }

    ReadableSpan root() {
        return root;
    }
}
