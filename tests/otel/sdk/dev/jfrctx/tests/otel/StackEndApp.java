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
 * 24 fresh threads (256 KiB stacks) each measure how deep a plain recursion goes, then descend
 * to a little less than that 49 times and, at the bottom, start a span and make it current at
 * every level until a {@link StackOverflowError}, which lands inside the bridge's attach at
 * many points. After each descent the thread must be back where it started: OTel's current
 * Context the root one, and no jfrctx context installed (an attach that failed must not have
 * happened). Prints {@code stack-end overflows N inside M leaked L jfrctx_leaked K live B}.
 * With the argument {@code plain}, the same without the bridge: how often OTel's own attach and
 * close leave a Context current at the end of a stack.
 */
public final class StackEndApp {
    private static Tracer tracer;

    private int reached;
    private int overflows;
    private int inside;
    private int leaked;
    private int jfrctxLeaked;

    private long plain(int depth, int limit) {
        reached = depth;
        if (depth >= limit) {
            return level(0);
        }
        return plain(depth + 1, limit) + 1;
    }

    private long level(int l) {
        Span span = tracer.spanBuilder("deep").startSpan();
        try (Scope s = span.makeCurrent()) {
            return level(l + 1) + l;
        } finally {
            span.end();
        }
    }

    private void descend(int limit) {
        try {
            plain(0, limit);
        } catch (StackOverflowError e) {
            overflows++;
            for (StackTraceElement f : e.getStackTrace()) {
                if (f.getClassName().startsWith("dev.jfrctx.tests.")) {
                    break; // below the bridge and the facade
                }
                if (f.getClassName().startsWith("dev.jfrctx.")) {
                    inside++;
                    break;
                }
            }
        }
        if (Context.current() != Context.root()) {
            leaked++;
            Context.root().makeCurrent(); // the leaked scope is lost: start clean again
        }
        if (ThreadState.current().context() != ContextData.EMPTY) {
            jfrctxLeaked++;
        }
    }

    private void round() {
        descend(Integer.MAX_VALUE);
        int end = reached;
        for (int j = 1; j <= 48; j++) {
            descend(Math.max(0, end - j));
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
            Thread t = new Thread(null, app::round, "stack-end-" + r, 256 * 1024);
            t.start();
            t.join();
            overflows += app.overflows;
            inside += app.inside;
            leaked += app.leaked;
            jfrctxLeaked += app.jfrctxLeaked;
        }
        System.out.println("stack-end overflows " + overflows + " inside " + inside + " leaked " + leaked
                + " jfrctx_leaked " + jfrctxLeaked + " live " + AgentLink.isLive());
    }
}
