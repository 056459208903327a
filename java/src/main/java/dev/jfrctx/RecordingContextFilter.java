package dev.jfrctx;

import dev.jfrctx.internal.AgentLink;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Decides which samples reach the sinks and listeners, from the context their thread had (the
 * filter of the draft JEP "Optionally Record Thread Context in JFR").
 *
 * <pre>{@code
 * RecordingContextFilter.Config.setContextFilter(
 *         RecordingContextFilter.Config.createFilter()
 *                 .forAllTypes().hasContext()                          // drop context-less samples...
 *                 .forType("jdk.ExecutionSample").hasKey(TENANT).hasEntry(TENANT, "acme")
 *                 .build());                                           // ...and keep only acme's CPU samples
 * }</pre>
 *
 * <p>Semantics:
 * <ul>
 * <li>No filter set (the default, or {@code setContextFilter(null)}): every sample passes.</li>
 * <li>A rule is given by {@link Builder#forAllTypes()} or {@link Builder#forType(String, String...)}
 *     and its predicates. The predicates of one rule are ANDed: a sample passes when all hold.</li>
 * <li>A per-type rule overrides the all-types rule for its types; types with neither pass.</li>
 * <li>{@link PerTypeBuilder#reset()} removes a rule's predicates: every sample of its types passes
 *     (so a reset per-type rule exempts that type from the all-types rule).</li>
 * <li>{@code hasContext()}: a context was installed (non-empty); {@code hasNoContext()}: none was;
 *     {@code hasKey(k)}: the context has {@code k}; {@code hasEntry(k, v)}: it maps {@code k} to
 *     {@code v}. A sample whose context the agent could not decide (JSON {@code "context": null})
 *     satisfies none of them: it passes only where no rule applies or the rule was reset.</li>
 * <li>The filter is applied when the agent decides a sample's context, about a second after the
 *     sample was taken: after {@link Config#setContextFilter} returns, every sample taken from then
 *     on obeys the new filter, and so may samples of the last second or so that were not decided
 *     yet.</li>
 * </ul>
 *
 * <p>Filters are immutable; {@link #toString()} is their text form, the syntax of the agent option
 * {@code filter=} (for example {@code *:has_context;jdk.ExecutionSample:has_entry(tenant=acme)}).
 * Without the agent, setting a filter only records it.
 */
public final class RecordingContextFilter {

    private static final String ALL = "*";

    private final String spec;

    private RecordingContextFilter(String spec) {
        this.spec = spec;
    }

    /** The text form (the {@code filter=} agent option syntax). */
    @Override
    public String toString() {
        return spec;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RecordingContextFilter && ((RecordingContextFilter) o).spec.equals(spec);
    }

    @Override
    public int hashCode() {
        return spec.hashCode();
    }

    /** Sets, reads and creates filters. */
    public static final class Config {
        private static RecordingContextFilter current;

        private Config() {
        }

        /**
         * Installs {@code filter} in the agent (replacing the {@code filter=} option's one), or
         * removes the filter when it is null.
         *
         * @param filter the filter, or null for none
         */
        public static void setContextFilter(RecordingContextFilter filter) {
            synchronized (Config.class) {
                AgentLink.setFilter(filter == null ? "" : filter.spec);
                current = filter;
            }
        }

        /**
         * Returns the filter last set with {@link #setContextFilter}, or null.
         *
         * @return the filter, or null
         */
        public static RecordingContextFilter contextFilter() {
            synchronized (Config.class) {
                return current;
            }
        }

        /**
         * Starts a new filter.
         *
         * @return a builder without rules
         */
        public static Builder createFilter() {
            return new Builder();
        }
    }

    /** Collects rules; not thread-safe. */
    public static final class Builder {
        /** Type ("*" for all) → predicates in text form, in the order first given. */
        private final Map<String, Set<String>> rules = new LinkedHashMap<>();

        private Builder() {
        }

        /**
         * Continues (or starts) the rule for all event types.
         *
         * @return the rule's builder
         */
        public PerTypeBuilder forAllTypes() {
            return rule(new String[] {ALL});
        }

        /**
         * Continues (or starts) the rule for the event types named, e.g. {@code
         * "jdk.ExecutionSample"}.
         *
         * @param type an event type name
         * @param more further event type names sharing the rule
         * @return the rule's builder
         */
        public PerTypeBuilder forType(String type, String... more) {
            Objects.requireNonNull(more, "jfrctx: event types are null");
            String[] all = new String[more.length + 1];
            all[0] = type;
            System.arraycopy(more, 0, all, 1, more.length);
            for (String t : all) {
                checkType(t);
            }
            return rule(all);
        }

        /**
         * Like {@link #forType(String, String...)} with JFR event types. Only this method needs
         * the {@code jdk.jfr} module; the rest of the facade works without it.
         *
         * @param type an event type
         * @param more further event types sharing the rule
         * @return the rule's builder
         */
        public PerTypeBuilder forType(jdk.jfr.EventType type, jdk.jfr.EventType... more) {
            String[] names = JfrTypes.names(type, more);
            String[] rest = new String[names.length - 1];
            System.arraycopy(names, 1, rest, 0, rest.length);
            return forType(names[0], rest);
        }

        /**
         * Returns the filter built so far (the builder stays usable).
         *
         * @return the filter
         */
        public RecordingContextFilter build() {
            StringBuilder sb = new StringBuilder();
            Set<String> all = rules.get(ALL);
            if (all != null) {
                append(sb, ALL, all);
            }
            for (Map.Entry<String, Set<String>> e : rules.entrySet()) {
                if (!e.getKey().equals(ALL)) {
                    append(sb, e.getKey(), e.getValue());
                }
            }
            return new RecordingContextFilter(sb.toString());
        }

        private static void append(StringBuilder sb, String type, Set<String> preds) {
            if (sb.length() > 0) {
                sb.append(';');
            }
            sb.append(type).append(':');
            sb.append(preds.isEmpty() ? "any" : String.join("+", preds));
        }

        private PerTypeBuilder rule(String[] types) {
            for (String t : types) {
                rules.computeIfAbsent(t, k -> new LinkedHashSet<>());
            }
            return new PerTypeBuilder(this, types);
        }

        private static void checkType(String t) {
            if (t == null) {
                throw new NullPointerException("jfrctx: event type name is null");
            }
            boolean bad = t.isEmpty() || t.equals(ALL);
            for (int i = 0; i < t.length() && !bad; i++) {
                char c = t.charAt(i);
                bad = c <= ' ' || c == 0x7f || ":;+%(),=".indexOf(c) >= 0;
            }
            if (bad) {
                throw new IllegalArgumentException("jfrctx: bad event type name \"" + t + "\"");
            }
        }
    }

    /** The predicates of one rule (ANDed); chains back to the {@link Builder}. */
    public static final class PerTypeBuilder {
        private final Builder builder;
        private final String[] types;

        private PerTypeBuilder(Builder builder, String[] types) {
            this.builder = builder;
            this.types = types;
        }

        private PerTypeBuilder add(String pred) {
            for (String t : types) {
                builder.rules.get(t).add(pred);
            }
            return this;
        }

        /**
         * Requires a (non-empty) context.
         *
         * @return this
         */
        public PerTypeBuilder hasContext() {
            return add("has_context");
        }

        /**
         * Requires that no context was installed.
         *
         * @return this
         */
        public PerTypeBuilder hasNoContext() {
            return add("has_no_context");
        }

        /**
         * Requires the context to have {@code key}.
         *
         * @param key the key
         * @return this
         */
        public PerTypeBuilder hasKey(RecordingContextKey key) {
            return add("has_key(" + encode(Checks.key(key).name()) + ")");
        }

        /**
         * Requires the context to map {@code key} to {@code value}.
         *
         * @param key the key
         * @param value the value
         * @return this
         */
        public PerTypeBuilder hasEntry(RecordingContextKey key, String value) {
            Checks.value(Checks.key(key), value);
            return add("has_entry(" + encode(key.name()) + "=" + encode(value) + ")");
        }

        /**
         * Removes this rule's predicates: every sample of its types passes.
         *
         * @return this
         */
        public PerTypeBuilder reset() {
            for (String t : types) {
                builder.rules.get(t).clear();
            }
            return this;
        }

        /**
         * Continues with the all-types rule.
         *
         * @return its builder
         */
        public PerTypeBuilder forAllTypes() {
            return builder.forAllTypes();
        }

        /**
         * Continues with the rule of other types.
         *
         * @param type an event type name
         * @param more further names
         * @return their rule's builder
         */
        public PerTypeBuilder forType(String type, String... more) {
            return builder.forType(type, more);
        }

        /**
         * Continues with the rule of other JFR event types.
         *
         * @param type an event type
         * @param more further types
         * @return their rule's builder
         */
        public PerTypeBuilder forType(jdk.jfr.EventType type, jdk.jfr.EventType... more) {
            return builder.forType(type, more);
        }

        /**
         * Builds the filter.
         *
         * @return the filter
         */
        public RecordingContextFilter build() {
            return builder.build();
        }
    }

    /** Percent-encodes a key or value for the text form. */
    static String encode(String s) {
        StringBuilder sb = new StringBuilder(s.length());
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            int c = b & 0xff;
            if (c <= ' ' || c >= 0x7f || ";+()=,:%".indexOf(c) >= 0) {
                sb.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                        .append(Character.toUpperCase(Character.forDigit(c & 0xf, 16)));
            } else {
                sb.append((char) c);
            }
        }
        return sb.toString();
    }

    /** The only place that touches {@code jdk.jfr}: loaded when an EventType overload is called. */
    private static final class JfrTypes {
        static String[] names(jdk.jfr.EventType type, jdk.jfr.EventType[] more) {
            Objects.requireNonNull(type, "jfrctx: event type is null");
            Objects.requireNonNull(more, "jfrctx: event types are null");
            List<String> names = new ArrayList<>();
            names.add(type.getName());
            for (jdk.jfr.EventType t : more) {
                names.add(Objects.requireNonNull(t, "jfrctx: event type is null").getName());
            }
            return names.toArray(new String[0]);
        }
    }
}
