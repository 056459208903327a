package dev.jfrctx.otel;

import io.opentelemetry.sdk.autoconfigure.spi.AutoConfigurationCustomizer;
import io.opentelemetry.sdk.autoconfigure.spi.AutoConfigurationCustomizerProvider;
import io.opentelemetry.sdk.autoconfigure.spi.ConfigProperties;
import java.util.Collections;

/**
 * The OpenTelemetry Java agent's entry point into {@code jfrctx-otel.jar} (listed in
 * {@code META-INF/services}): the agent loads the extension in its own class loader, remaps the
 * OpenTelemetry API names to its shaded ones, and calls {@link #customize} while it configures its
 * SDK, before any Context is used. The properties hook (run once, when the configuration is read)
 * wraps the context storage; the tracer provider hook adds the span processor. Settings (system
 * properties {@code -Dotel.jfrctx.attributes=...} or environment {@code OTEL_JFRCTX_ATTRIBUTES},
 * like every agent setting): {@code otel.jfrctx.attributes}, {@code otel.jfrctx.span}, see
 * {@link JfrctxOtel}. A malformed setting prints one line and leaves the bridge off.
 */
public final class AgentCustomizer implements AutoConfigurationCustomizerProvider {

    private SpanEntries entries;
    private boolean tried;

    @Override
    public void customize(AutoConfigurationCustomizer autoConfiguration) {
        autoConfiguration
                .addPropertiesCustomizer(this::install)
                .addTracerProviderCustomizer((builder, config) -> {
                    SpanEntries e = installOnce(config);
                    return e == null ? builder : builder.addSpanProcessor(e);
                });
    }

    private java.util.Map<String, String> install(ConfigProperties config) {
        installOnce(config);
        return Collections.emptyMap();
    }

    /** Once: from the properties hook, else (a configuration without it) from the tracer hook. */
    private synchronized SpanEntries installOnce(ConfigProperties config) {
        if (tried) {
            return entries;
        }
        tried = true;
        try {
            String spec = config.getString(JfrctxOtel.ATTRIBUTES_PROPERTY, RootAttributes.DEFAULT);
            RootAttributes attributes = RootAttributes.parse(spec);
            SpanIds ids = SpanIds.parse(config.getString(JfrctxOtel.SPAN_PROPERTY));
            entries = JfrctxOtel.wrapStorage(attributes, ids);
        } catch (IllegalArgumentException e) { // a bad setting, or none with nothing to record
            System.err.println(e.getMessage() + "; jfrctx-otel is off");
            return null;
        } catch (IllegalStateException e) {
            System.err.println(e.getMessage() + "; jfrctx-otel's extension is off");
            return null;
        }
        return entries;
    }

    @Override
    public int order() {
        return 0;
    }
}
