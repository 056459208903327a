package dev.jfrctx.tests.otel;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import dev.jfrctx.otel.JfrctxOtel;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.sdk.trace.ReadableSpan;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The SDK path of {@code tests/it/otel.rs}: an application that builds the OpenTelemetry SDK itself,
 * installs the bridge with {@code JfrctxOtel.install}, and installs its own jfrctx context
 * ({@code tenant}) around its requests with the same facade. Per request: a SERVER root span
 * (route and method attributes), {@code in_root} inside it on this thread, a child span with
 * {@code in_child}, then {@code in_pool} on a pool thread with the root's Context made current
 * there by hand (what the OTel agent's executor instrumentation does). Prints
 * {@code span TENANT ROOT CHILD TRACE PROFILE_ID} per request (the root's
 * {@code pyroscope.profile.id}, {@code null} unless {@code -Dotel.jfrctx.span=root}), and {@code in_tenant_only} runs with the tenant and no
 * span. Every method burns CPU in {@code burn} (kept out of line by the test).
 */
public final class SdkApp {
    static final RecordingContextKey TENANT = RecordingContextKey.forName("tenant");
    static final AttributeKey<String> PROFILE_ID = AttributeKey.stringKey("pyroscope.profile.id");

    public static void main(String[] args) throws Exception {
        int requests = Integer.parseInt(args[0]);
        Tracer tracer = JfrctxOtel.install(SdkTracerProvider.builder()).build().get("sdk-app");
        ExecutorService pool = Executors.newFixedThreadPool(1, r -> new Thread(r, "sdk-pool"));
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < requests; i++) {
            String tenant = "t" + (i % 3);
            try (RecordingContext ignored = RecordingContext.where(TENANT, tenant).build()) {
                Span root = tracer.spanBuilder("GET /items/{id}").setSpanKind(SpanKind.SERVER)
                        .setAttribute("http.request.method", "GET").setAttribute("http.route", "/items/{id}")
                        .startSpan();
                Span child;
                try (Scope r = root.makeCurrent()) {
                    in_root(i);
                    child = tracer.spanBuilder("child").startSpan();
                    try (Scope c = child.makeCurrent()) {
                        in_child(i);
                    } finally {
                        child.end();
                    }
                    Context ctx = Context.current();
                    pool.submit(() -> {
                        try (Scope p = ctx.makeCurrent()) {
                            in_pool(1);
                        }
                    }).get();
                    try (Scope again = Context.current().makeCurrent()) { // already current: no-op
                        in_root(i);
                    }
                } finally {
                    root.end();
                }
                in_tenant_only(i);
                out.append("span ").append(tenant).append(' ').append(root.getSpanContext().getSpanId())
                        .append(' ').append(child.getSpanContext().getSpanId()).append(' ')
                        .append(root.getSpanContext().getTraceId()).append(' ')
                        .append(((ReadableSpan) root).getAttribute(PROFILE_ID)).append('\n');
            }
        }
        pool.shutdown();
        System.out.print(out);
        System.out.println("misused " + JfrctxOtel.misusedScopes());
    }

    static long in_root(long seed) {
        return burn(seed, 2_000_000);
    }

    static long in_child(long seed) {
        return burn(seed, 2_000_000);
    }

    static long in_pool(long seed) {
        return burn(seed, 2_000_000);
    }

    static long in_tenant_only(long seed) {
        return burn(seed, 1_000_000);
    }

    static long burn(long seed, long nanos) {
        long h = seed;
        long end = System.nanoTime() + nanos;
        do {
            for (int i = 0; i < 2_000; i++) {
                h = h * 6364136223846793005L + 1442695040888963407L;
                h ^= h >>> 29;
            }
        } while (System.nanoTime() < end);
        return h;
    }
}
