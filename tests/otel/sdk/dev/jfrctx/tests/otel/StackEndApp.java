package dev.jfrctx.tests.otel;

import dev.jfrctx.internal.AgentLink;
import dev.jfrctx.internal.ContextData;
import dev.jfrctx.internal.ThreadState;
import dev.jfrctx.otel.JfrctxOtel;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.trace.SdkTracerProvider;

/**
 * Spans made current where a thread's stack ends, through the bridge ({@code JfrctxOtel.install}):
 * 24 fresh threads (256 KiB stacks) each make 48 descents ({@code gt.StackDescent}) and, at
 * the bottom of each, start a span and make it current at every level until a
 * {@link StackOverflowError}, which lands inside the bridge's attach at many points. After each descent the thread must be back where it started: OTel's current
 * Context the root one, and no jfrctx context installed (an attach that failed must not have
 * happened). Prints {@code stack-end overflows N inside M leaked L jfrctx_leaked K live B}.
 * With the argument {@code plain}, the same without the bridge: how often OTel's own attach and
 * close leave a Context current at the end of a stack.
 */
public final class StackEndApp extends gt.StackDescent {
    private static Tracer tracer;

    private int leaked;
    private int jfrctxLeaked;

    @Override
    protected long bottom(int l) {
        Span span = tracer.spanBuilder("deep").startSpan();
        try (Scope s = span.makeCurrent()) {
            return bottom(l + 1) + l;
        } finally {
            span.end();
        }
    }

    @Override
    protected void afterDescent() {
        if (Context.current() != Context.root()) {
            leaked++;
            Context.root().makeCurrent(); // the leaked scope is lost: start clean again
        }
        if (ThreadState.current().context() != ContextData.EMPTY) {
            jfrctxLeaked++;
        }
    }

    public static void main(String[] args) throws Exception {
        boolean bridge = args.length == 0 || args[0].equals("bridge");
        tracer = (bridge ? JfrctxOtel.install(SdkTracerProvider.builder()) : SdkTracerProvider.builder())
                .build().get("stack-end");
        int overflows = 0;
        int inside = 0;
        int leaked = 0;
        int jfrctxLeaked = 0;
        for (int r = 0; r < 24; r++) {
            StackEndApp app = new StackEndApp();
            Thread t = new Thread(null, () -> app.descend(48), "stack-end-" + r, 256 * 1024);
            t.start();
            t.join();
            overflows += app.overflows();
            inside += app.inside();
            leaked += app.leaked;
            jfrctxLeaked += app.jfrctxLeaked;
        }
        System.out.println("stack-end overflows " + overflows + " inside " + inside + " leaked " + leaked
                + " jfrctx_leaked " + jfrctxLeaked + " live " + AgentLink.isLive());
    }
}
