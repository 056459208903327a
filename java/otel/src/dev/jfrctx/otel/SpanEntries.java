package dev.jfrctx.otel;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.trace.ReadWriteSpan;
import io.opentelemetry.sdk.trace.ReadableSpan;
import io.opentelemetry.sdk.trace.SpanProcessor;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The {@link SpanEntry} of every live local span, keyed by the span object (SDK spans keep
 * identity equality). As a {@link SpanProcessor} it learns each span's local root when the span
 * starts (the parent's root, or the span itself when its parent is absent or remote) and forgets
 * the span when it ends. With {@link SpanIds#NONE} a span whose parent has an entry shares it
 * (the root's attributes are all it records). A span attached without having been seen start
 * (started before the processor was registered) gets its entry on its first attach; such
 * entries, and entries of spans whose end was missed, are swept when the map outgrows
 * {@link #SWEEP_AT}.
 */
final class SpanEntries implements SpanProcessor {

    static final int SWEEP_AT = 1 << 16;

    private final ConcurrentHashMap<Span, SpanEntry> entries = new ConcurrentHashMap<>();
    /** The span attribute Grafana's traces-to-profiles link looks for on a root span. */
    static final AttributeKey<String> PROFILE_ID = AttributeKey.stringKey("pyroscope.profile.id");

    private final RootAttributes config;
    /** Which ids are recorded: with {@link SpanIds#ROOT} roots also get {@link #PROFILE_ID}. */
    private final SpanIds ids;

    SpanEntries(RootAttributes config, SpanIds ids) {
        this.config = config;
        this.ids = ids;
    }

    /** The entry of a span of local root {@code root} (null: unknown). */
    private SpanEntry entryFor(SpanContext own, ReadableSpan root) {
        if (ids == SpanIds.NONE) {
            return new SpanEntry(null, null, root, config);
        }
        String spanId = ids == SpanIds.ROOT && root != null
                ? root.getSpanContext().getSpanId() : own.getSpanId();
        return new SpanEntry(own.getTraceId(), spanId, root, config);
    }

    /**
     * The entry of the span in {@code context}, or null when the context holds no span of this
     * process that jfrctx should name (none, an invalid one, a remote parent, not an SDK span).
     */
    SpanEntry of(Context context) {
        Span span = Span.fromContextOrNull(context);
        if (span == null) {
            return null;
        }
        SpanEntry e = entries.get(span);
        return e != null ? e : unseen(span);
    }

    /** A span that did not pass {@link #onStart}: out of line, rare. */
    private SpanEntry unseen(Span span) {
        if (!(span instanceof ReadableSpan)) {
            return null; // a remote parent or a non-SDK span: not a span this process exports
        }
        ReadableSpan readable = (ReadableSpan) span;
        SpanContext sc = readable.getSpanContext();
        if (!sc.isValid()) {
            return null;
        }
        SpanContext parent = readable.getParentSpanContext();
        ReadableSpan root = !parent.isValid() || parent.isRemote() ? readable : null;
        SpanEntry e = entryFor(sc, root);
        if (!readable.hasEnded()) {
            SpanEntry raced = entries.putIfAbsent(span, e);
            if (raced != null) {
                return raced;
            }
            if (entries.size() > SWEEP_AT) {
                sweep();
            }
        }
        return e;
    }

    private void sweep() {
        for (Iterator<Map.Entry<Span, SpanEntry>> it = entries.entrySet().iterator(); it.hasNext(); ) {
            Span s = it.next().getKey();
            if (!(s instanceof ReadableSpan) || ((ReadableSpan) s).hasEnded()) {
                it.remove();
            }
        }
    }

    int size() {
        return entries.size();
    }

    @Override
    public void onStart(Context parentContext, ReadWriteSpan span) {
        SpanContext sc = span.getSpanContext();
        if (!sc.isValid()) {
            return;
        }
        ReadableSpan root = span;
        Span parent = Span.fromContextOrNull(parentContext);
        if (parent != null && parent.getSpanContext().isValid() && !parent.getSpanContext().isRemote()) {
            SpanEntry p = entries.get(parent);
            if (p != null && ids == SpanIds.NONE) {
                entries.put(span, p); // without ids a span records its root's attributes only
                return;
            } else if (p != null) {
                root = p.root();
            } else if (parent instanceof ReadableSpan) {
                // a parent this processor did not see start: its root is known only when it is one
                SpanContext grand = ((ReadableSpan) parent).getParentSpanContext();
                root = !grand.isValid() || grand.isRemote() ? (ReadableSpan) parent : null;
            } else {
                root = span; // a parent of another SDK: the span is the first of this one
            }
        }
        if (ids == SpanIds.ROOT && root == span) {
            span.setAttribute(PROFILE_ID, sc.getSpanId());
        }
        entries.put(span, entryFor(sc, root));
        if (entries.size() > SWEEP_AT) {
            sweep();
        }
    }

    @Override
    public boolean isStartRequired() {
        return true;
    }

    @Override
    public void onEnd(ReadableSpan span) {
        entries.remove(span);
    }

    @Override
    public boolean isEndRequired() {
        return true;
    }
}
