package dev.jfrctx.bench.server;

import dev.jfrctx.RecordingContext;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Five endpoints, each a different kind of work (sizes: about 0.5–1.5 ms of CPU on this
 * project's 2-vCPU machine), each in a method named after it so that profiles are readable:
 *
 * <ul>
 *   <li>{@code /app/cpu}: a compute loop ({@code cpu_work});
 *   <li>{@code /app/alloc}: allocation: a list of small objects rendered to a ~40 KB string
 *       ({@code alloc_work});
 *   <li>{@code /app/handoff}: two tasks handed to a 2-thread pool ({@code handoff-N}) and awaited;
 *       the pool is {@code RecordingContext.wrap}ped, so the tasks run in the request's context
 *       (with Pyroscope, the task installs the request's labels itself);
 *   <li>{@code /app/lock}: short critical sections on one lock shared by all requests
 *       ({@code lock_work});
 *   <li>{@code /app/mixed}: a little of compute and allocation.
 * </ul>
 */
public final class BenchServlet extends HttpServlet {
    private static final long serialVersionUID = 1L;

    private static final ExecutorService RAW_POOL = Executors.newFixedThreadPool(2, new Named("handoff-"));
    private static final ExecutorService WRAPPED_POOL = RecordingContext.wrap(RAW_POOL);
    private static final Object LOCK = new Object();
    private static final java.lang.management.ThreadMXBean THREAD_CPU =
            java.lang.management.ManagementFactory.getThreadMXBean();
    /** Thread CPU inside {@code cpu_work} of {@code /app/cpu}, and its calls (see /admin/stats). */
    static final java.util.concurrent.atomic.LongAdder LOOP_NS = new java.util.concurrent.atomic.LongAdder();
    static final java.util.concurrent.atomic.LongAdder LOOP_CALLS = new java.util.concurrent.atomic.LongAdder();
    private static long shared;

    private final transient Labeler labeler;

    BenchServlet(String filter) {
        this.labeler = filter.contains("pyroscope") ? Labeler.pyroscope() : null;
    }

    static void shutdown() {
        RAW_POOL.shutdownNow();
    }

    @Override
    protected void doGet(HttpServletRequest request, HttpServletResponse response)
            throws ServletException, IOException {
        String endpoint = BenchFilter.endpoint(request);
        long seed = System.nanoTime();
        long result;
        switch (endpoint) {
            case "/cpu": {
                // The loop alone, timed in thread CPU: shows whether the application's own compiled
                // code got slower (it calls nothing), apart from what happens around it.
                long c0 = THREAD_CPU.getCurrentThreadCpuTime();
                result = cpu_work(seed, 600_000);
                LOOP_NS.add(THREAD_CPU.getCurrentThreadCpuTime() - c0);
                LOOP_CALLS.increment();
                break;
            }
            case "/alloc": result = alloc_work(seed, 1_500); break;
            case "/handoff": result = handoff(request, seed); break;
            case "/lock": result = lock_work(seed, 8, 25_000); break;
            case "/mixed": result = cpu_work(seed, 200_000) + alloc_work(seed, 400); break;
            default:
                response.sendError(HttpServletResponse.SC_NOT_FOUND);
                return;
        }
        byte[] body = (endpoint + " " + result + "\n").getBytes(StandardCharsets.US_ASCII);
        response.setContentType("text/plain");
        response.setContentLength(body.length);
        response.getOutputStream().write(body);
    }

    static long cpu_work(long seed, int steps) {
        long h = seed | 1;
        for (int i = 0; i < steps; i++) {
            h ^= h << 13;
            h ^= h >>> 7;
            h ^= h << 17;
        }
        return h;
    }

    /** Small objects, then a string built from them: young-generation garbage per request. */
    static long alloc_work(long seed, int items) {
        List<long[]> list = new ArrayList<>();
        for (int i = 0; i < items; i++) {
            list.add(new long[] {seed + i, i, seed ^ i});
        }
        StringBuilder sb = new StringBuilder();
        for (long[] item : list) {
            sb.append('{').append(item[0]).append(',').append(item[2]).append('}');
        }
        return sb.toString().hashCode();
    }

    static long lock_work(long seed, int sections, int steps) {
        long h = seed;
        for (int s = 0; s < sections; s++) {
            h = cpu_work(h, steps);
            synchronized (LOCK) {
                shared = cpu_work(shared ^ h, steps / 2);
                h ^= shared;
            }
        }
        return h;
    }

    private long handoff(HttpServletRequest request, long seed) throws ServletException {
        List<Future<Long>> futures = new ArrayList<>(2);
        Object labels = labeler == null ? null : request.getAttribute(BenchFilter.LABELS_ATTRIBUTE);
        for (int t = 0; t < 2; t++) {
            long s = seed + t;
            if (labels == null) {
                futures.add(WRAPPED_POOL.submit(() -> cpu_work(s, 250_000)));
            } else {
                futures.add(RAW_POOL.submit(() -> {
                    try (AutoCloseable ignored = labeler.open(labels)) {
                        return cpu_work(s, 250_000);
                    }
                }));
            }
        }
        long h = cpu_work(seed, 50_000);
        try {
            for (Future<Long> f : futures) {
                h ^= f.get();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ServletException(e);
        } catch (ExecutionException e) {
            throw new ServletException(e.getCause());
        }
        return h;
    }

    private static final class Named implements java.util.concurrent.ThreadFactory {
        private final String prefix;
        private final AtomicInteger n = new AtomicInteger();

        Named(String prefix) {
            this.prefix = prefix;
        }

        @Override
        public Thread newThread(Runnable r) {
            Thread t = new Thread(r, prefix + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        }
    }
}
