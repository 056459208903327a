import com.sun.management.ThreadMXBean;
import dev.jfrctx.otel.JfrctxOtel;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.SdkTracerProviderBuilder;
import java.lang.management.ManagementFactory;

/**
 * Cost of one OTel Context attach + detach (makeCurrent / close) on one thread, with the jfrctx
 * bridge ({@code bridge}) or without ({@code plain}): ns and bytes allocated per attach/detach,
 * for a server span and a child span nested in it (two attaches per round). Run by run.sh.
 */
public final class AttachBench {
    static long sink;

    public static void main(String[] args) {
        boolean bridge = args[0].equals("bridge");
        long rounds = Long.parseLong(args[1]);
        SdkTracerProviderBuilder b = SdkTracerProvider.builder();
        if (bridge) {
            JfrctxOtel.install(b);
        }
        Tracer tracer = b.build().get("bench");
        Span root = tracer.spanBuilder("GET /orders").setAttribute("http.request.method", "GET")
                .setAttribute("http.route", "/orders").startSpan();
        Context rootCtx = Context.root().with(root);
        Span child;
        try (Scope s = rootCtx.makeCurrent()) {
            child = tracer.spanBuilder("child").startSpan();
        }
        Context childCtx = rootCtx.with(child);
        ThreadMXBean mx = (ThreadMXBean) ManagementFactory.getThreadMXBean();
        long tid = Thread.currentThread().getId();
        if (args.length > 2 && args[2].equals("spans")) {
            spans(tracer, mx, tid, rounds / 10, args[0]);
            return;
        }
        for (int rep = 0; rep < 5; rep++) {
            long a0 = mx.getThreadAllocatedBytes(tid);
            long c0 = mx.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            loop(rootCtx, childCtx, rounds);
            long t1 = System.nanoTime();
            long c1 = mx.getCurrentThreadCpuTime();
            long a1 = mx.getThreadAllocatedBytes(tid);
            double perAttach = 2.0 * rounds;
            System.out.printf("%s rep %d: %.1f ns (thread CPU %.1f ns) and %.2f bytes per attach+detach%n",
                    args[0], rep, (t1 - t0) / perAttach, (c1 - c0) / perAttach, (a1 - a0) / perAttach);
        }
        System.out.println(sink == 42 ? "" : "done");
    }

    /** A request's worth per round: a new root span and a child, each started, attached, detached, ended. */
    static void spans(Tracer tracer, ThreadMXBean mx, long tid, long rounds, String mode) {
        for (int rep = 0; rep < 5; rep++) {
            long a0 = mx.getThreadAllocatedBytes(tid);
            long c0 = mx.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            for (long i = 0; i < rounds; i++) {
                Span root = tracer.spanBuilder("GET /orders").setAttribute("http.request.method", "GET")
                        .setAttribute("http.route", "/orders").startSpan();
                try (Scope r = root.makeCurrent()) {
                    Span child = tracer.spanBuilder("child").startSpan();
                    try (Scope c = child.makeCurrent()) {
                        sink += i;
                    }
                    child.end();
                }
                root.end();
            }
            long t1 = System.nanoTime();
            long c1 = mx.getCurrentThreadCpuTime();
            long a1 = mx.getThreadAllocatedBytes(tid);
            System.out.printf("%s spans rep %d: %.0f ns (thread CPU %.0f ns) and %.0f bytes per request"
                    + " (2 new spans, 2 attaches)%n",
                    mode, rep, (t1 - t0) / (double) rounds, (c1 - c0) / (double) rounds, (a1 - a0) / (double) rounds);
        }
    }

    static void loop(Context rootCtx, Context childCtx, long rounds) {
        for (long i = 0; i < rounds; i++) {
            try (Scope r = rootCtx.makeCurrent()) {
                try (Scope c = childCtx.makeCurrent()) {
                    sink += i;
                }
            }
        }
    }
}
