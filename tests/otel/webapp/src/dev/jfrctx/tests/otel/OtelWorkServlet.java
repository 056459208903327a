package dev.jfrctx.tests.otel;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The service of {@code tests/it/otel.rs}. It knows nothing of jfrctx or OpenTelemetry: the OTel
 * Java agent makes a server span per request and, with
 * {@code otel.instrumentation.methods.include=dev.jfrctx.tests.otel.OtelWorkServlet[work_*...]},
 * one span per {@code work_*} call; it carries the Context into {@link #POOL} (an
 * {@code ExecutorService}) and along a {@code CompletableFuture} chain.
 *
 * <ul>
 * <li>{@code /sync}: {@code work_sync} on the request thread;</li>
 * <li>{@code /pool}: {@code work_front} on the request thread, then {@code work_pool} on a pool
 *     thread while the request thread waits;</li>
 * <li>{@code /chain}: {@code work_stage1} then {@code work_stage2} on pool threads, a
 *     {@code supplyAsync(...).thenApplyAsync(...)} chain;</li>
 * <li>{@code /clock}: {@code System.nanoTime()} and the epoch time in ns around it, for the test
 *     to map span times onto sample times.</li>
 * </ul>
 * Every {@code work_*} spends its CPU in {@link #burn}, kept out of line by the test, so a sample
 * whose stack has {@code burn} under {@code work_X} was taken inside {@code work_X}'s span.
 */
public final class OtelWorkServlet extends HttpServlet {
    private static final long serialVersionUID = 1L;

    private static final AtomicInteger THREADS = new AtomicInteger();
    static final ExecutorService POOL = Executors.newFixedThreadPool(4, r -> {
        Thread t = new Thread(r, "otel-pool-" + THREADS.incrementAndGet());
        t.setDaemon(true);
        return t;
    });

    @Override
    protected void doGet(HttpServletRequest request, HttpServletResponse response) throws IOException {
        String path = request.getServletPath();
        long seed = path.hashCode();
        String body;
        try {
            switch (path) {
                case "/sync":
                    body = path + " " + work_sync(seed);
                    break;
                case "/pool": {
                    long front = work_front(seed);
                    body = path + " " + POOL.submit(() -> work_pool(front)).get();
                    break;
                }
                case "/chain":
                    body = path + " " + CompletableFuture.supplyAsync(() -> work_stage1(seed), POOL)
                            .thenApplyAsync(OtelWorkServlet::work_stage2, POOL).get();
                    break;
                case "/clock": {
                    long before = epochNanos();
                    long nano = System.nanoTime();
                    long after = epochNanos();
                    body = "clock " + before + " " + nano + " " + after;
                    break;
                }
                default:
                    response.sendError(HttpServletResponse.SC_NOT_FOUND);
                    return;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        } catch (ExecutionException e) {
            throw new IOException(e.getCause());
        }
        byte[] bytes = (body + "\n").getBytes(StandardCharsets.US_ASCII);
        response.setContentType("text/plain");
        response.setContentLength(bytes.length);
        response.getOutputStream().write(bytes);
    }

    private static long epochNanos() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    static long work_sync(long seed) {
        return burn(seed, 3_000_000);
    }

    static long work_front(long seed) {
        return burn(seed, 1_000_000);
    }

    static long work_pool(long seed) {
        return burn(seed, 2_000_000);
    }

    static long work_stage1(long seed) {
        return burn(seed, 1_500_000);
    }

    static long work_stage2(long seed) {
        return burn(seed, 1_500_000);
    }

    /** Spins for about {@code nanos} of wall time. */
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
