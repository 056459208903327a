package dev.jfrctx.otel;

import dev.jfrctx.internal.ContextCache;
import io.opentelemetry.context.ContextStorage;
import io.opentelemetry.sdk.trace.SdkTracerProviderBuilder;

/**
 * Puts OpenTelemetry's current span on jfrctx samples: whenever a Context becomes current on a
 * thread (and when the previous one is restored), the thread's jfrctx context becomes
 * {@code trace_id}, {@code span_id} and chosen attributes of the trace's local root span (by
 * default {@code http.route} as {@code endpoint} and {@code http.request.method} as
 * {@code method}), extending the context the application installed itself with the same facade.
 *
 * <p>With the OpenTelemetry Java agent nothing is called: {@code jfrctx-otel.jar} is an agent
 * extension ({@code -Dotel.javaagent.extensions=jfrctx-otel.jar}, see {@link AgentCustomizer}).
 * An application that builds the OpenTelemetry SDK itself makes one call before it builds the
 * tracer provider and before anything touches {@code Context.current()}:
 *
 * <pre>{@code
 * SdkTracerProvider tracing = JfrctxOtel.install(SdkTracerProvider.builder()
 *         .addSpanProcessor(BatchSpanProcessor.builder(exporter).build())).build();
 * }</pre>
 */
public final class JfrctxOtel {

    /** The system property (or {@code otel.jfrctx.attributes} agent setting) naming the root attributes. */
    public static final String ATTRIBUTES_PROPERTY = "otel.jfrctx.attributes";

    /**
     * The system property (or agent setting) choosing what {@code span_id} names: {@code innermost}
     * (default: the span current on the thread), {@code root} (the local root span, which then
     * also gets the attribute {@code pyroscope.profile.id}: Grafana's traces-to-profiles link), or
     * {@code none} (neither {@code span_id} nor {@code trace_id}: only the root's attributes, whose
     * context maps recur, so that no span makes a new one).
     */
    public static final String SPAN_PROPERTY = "otel.jfrctx.span";

    private static SpanEntries installed;

    private JfrctxOtel() {
    }

    /**
     * Installs the bridge with the root attributes of {@value #ATTRIBUTES_PROPERTY} (system
     * property; default {@code http.route=endpoint,http.request.method=method}) and the ids
     * {@value #SPAN_PROPERTY} chooses (system property; default {@code innermost}).
     *
     * @param builder the tracer provider builder, which gets the bridge's span processor
     * @return {@code builder}
     * @throws IllegalArgumentException if a setting is malformed, or {@code none} is chosen with
     *     no attributes
     * @throws IllegalStateException if the bridge was installed before
     */
    public static SdkTracerProviderBuilder install(SdkTracerProviderBuilder builder) {
        String spec = System.getProperty(ATTRIBUTES_PROPERTY, RootAttributes.DEFAULT);
        SpanIds ids = SpanIds.parse(System.getProperty(SPAN_PROPERTY));
        return install(builder, RootAttributes.parse(spec), ids);
    }

    /**
     * Installs the bridge: wraps OpenTelemetry's {@link ContextStorage} (which must not have been
     * used yet: {@code ContextStorage.addWrapper} has no effect after the first
     * {@code Context.current()}) and adds the span processor that learns each span's local root.
     *
     * @param builder the tracer provider builder, which gets the bridge's span processor
     * @param attributes {@code attribute=key,...}: the local root's string attributes to record
     *     and the jfrctx key of each (blank: none)
     * @param rootSpanIds {@code span_id} names the local root span instead of the innermost one,
     *     and local roots get the attribute {@code pyroscope.profile.id}
     * @return {@code builder}
     * @throws IllegalArgumentException if {@code attributes} is malformed
     * @throws IllegalStateException if the bridge was installed before
     */
    public static SdkTracerProviderBuilder install(SdkTracerProviderBuilder builder, String attributes,
            boolean rootSpanIds) {
        SpanIds ids = rootSpanIds ? SpanIds.ROOT : SpanIds.INNERMOST;
        return install(builder, RootAttributes.parse(attributes), ids);
    }

    private static SdkTracerProviderBuilder install(SdkTracerProviderBuilder builder,
            RootAttributes attributes, SpanIds ids) {
        builder.addSpanProcessor(wrapStorage(attributes, ids));
        return builder;
    }

    /**
     * Wraps the context storage once; returns the span processor to register.
     *
     * @throws IllegalArgumentException with {@link SpanIds#NONE} and no attributes: nothing to
     *     record
     */
    static synchronized SpanEntries wrapStorage(RootAttributes config, SpanIds ids) {
        if (installed != null) {
            throw new IllegalStateException("jfrctx-otel: the bridge is already installed");
        }
        if (ids == SpanIds.NONE && config.size() == 0) {
            throw new IllegalArgumentException("jfrctx-otel: " + SPAN_PROPERTY + "=none and no "
                    + ATTRIBUTES_PROPERTY + ": nothing to record");
        }
        SpanEntries entries = new SpanEntries(config, ids);
        if (ids != SpanIds.NONE) {
            // A span's maps are built by its own builder only: the facade's shared cache of
            // recent maps would never find them again, and they would evict the application's
            // own. Without ids the root attributes' maps recur: they are cached, and no builder
            // pays the check for the key.
            ContextCache.uncached(RootAttributes.SPAN_ID);
        }
        ContextStorage.addWrapper(delegate -> new BridgeStorage(delegate, entries));
        installed = entries;
        return entries;
    }

    /**
     * Scopes whose jfrctx context could not be closed because OpenTelemetry scopes were closed
     * out of order or on another thread (an application bug OpenTelemetry itself reports).
     *
     * @return the count since the start
     */
    public static long misusedScopes() {
        return BridgeStorage.MISUSED.get();
    }
}
