package dev.jfrctx.otel;

import dev.jfrctx.RecordingContextKey;
import io.opentelemetry.api.common.AttributeKey;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Which attributes of a trace's local root span become jfrctx context entries, and under which
 * key: the text form {@code attribute=key,attribute=key} (an entry without {@code =key} keeps
 * the attribute's name). Default {@value #DEFAULT}.
 */
final class RootAttributes {

    /** {@code http.route} as {@code endpoint}, the request method as {@code method}. */
    static final String DEFAULT = "http.route=endpoint,http.request.method=method";

    /** Keys that the bridge writes itself; an attribute may not take them. */
    static final String TRACE_ID = "trace_id";
    static final String SPAN_ID = "span_id";

    final List<AttributeKey<?>> attributes;
    final List<RecordingContextKey> keys;

    private RootAttributes(List<AttributeKey<?>> attributes, List<RecordingContextKey> keys) {
        this.attributes = Collections.unmodifiableList(attributes);
        this.keys = Collections.unmodifiableList(keys);
    }

    int size() {
        return attributes.size();
    }

    /**
     * Parses the text form; blank means none. Attribute values are read whatever their type
     * (string, long, double, boolean: their {@code toString}).
     *
     * @throws IllegalArgumentException with a message naming the bad entry
     */
    static RootAttributes parse(String spec) {
        List<AttributeKey<?>> attributes = new ArrayList<>();
        List<RecordingContextKey> keys = new ArrayList<>();
        if (spec != null && !spec.trim().isEmpty()) {
            for (String item : spec.split(",")) {
                String entry = item.trim();
                if (entry.isEmpty()) {
                    continue;
                }
                int eq = entry.indexOf('=');
                String attribute = (eq < 0 ? entry : entry.substring(0, eq)).trim();
                String key = (eq < 0 ? attribute : entry.substring(eq + 1)).trim();
                if (attribute.isEmpty() || key.isEmpty()) {
                    throw new IllegalArgumentException("jfrctx-otel: bad attribute entry '" + entry
                            + "' (expected attribute=key, e.g. http.route=endpoint)");
                }
                if (key.equals(TRACE_ID) || key.equals(SPAN_ID)) {
                    throw new IllegalArgumentException("jfrctx-otel: attribute '" + attribute
                            + "' cannot be recorded as '" + key + "': the bridge writes that key");
                }
                RecordingContextKey k;
                try {
                    k = RecordingContextKey.forName(key);
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("jfrctx-otel: bad key '" + key + "' for attribute '"
                            + attribute + "': " + e.getMessage());
                }
                if (keys.contains(k)) {
                    throw new IllegalArgumentException("jfrctx-otel: key '" + key + "' named twice");
                }
                attributes.add(AttributeKey.stringKey(attribute));
                keys.add(k);
            }
        }
        return new RootAttributes(attributes, keys);
    }
}
