package dev.jfrctx.examples.servlet;

import jakarta.servlet.AsyncContext;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The endpoints of {@link WorkServlet} served asynchronously, with two hand-offs and no
 * {@code RecordingContext} call: {@code /async/orders}, {@code /async/search},
 * {@code /async/report} call {@code startAsync()}, do the first half of the work
 * ({@code work_NAME}) on a plain thread pool ({@code Executors.newFixedThreadPool}), the second
 * half in a {@code CompletableFuture.supplyAsync} stage (the common pool, or a new thread when
 * the common pool has one thread), and answer from there. The request's context, installed by
 * {@link RecordingContextServletFilter} on the request thread, reaches that work only through
 * the Java agent ({@code -javaagent:jfrctx-agent.jar}): {@code tests/it/app_server.rs} checks that
 * every sample in {@code AsyncWorkServlet.work_NAME} carries {@code endpoint=/async/NAME}.
 */
public final class AsyncWorkServlet extends HttpServlet {
    private static final long serialVersionUID = 1L;

    private static final AtomicInteger THREADS = new AtomicInteger();
    private static final ExecutorService POOL = Executors.newFixedThreadPool(2, r -> {
        Thread t = new Thread(r, "async-work-" + THREADS.getAndIncrement());
        t.setDaemon(true);
        return t;
    });

    @Override
    protected void doGet(HttpServletRequest request, HttpServletResponse response) throws IOException {
        String endpoint = RecordingContextServletFilter.endpoint(request);
        String name = endpoint.substring(endpoint.lastIndexOf('/') + 1);
        if (!name.equals("orders") && !name.equals("search") && !name.equals("report")) {
            response.sendError(HttpServletResponse.SC_NOT_FOUND);
            return;
        }
        // The same work for every endpoint: each gets a third of the samples, however few
        // requests a loaded machine answers.
        int rounds = 8_000;
        String id = request.getHeader("X-Request-Id");
        AsyncContext async = request.startAsync();
        POOL.execute(() -> {
            long first = work(name, id, rounds / 2);
            CompletableFuture.supplyAsync(() -> first ^ work(name, id, rounds / 2))
                    .whenComplete((result, failure) -> answer(async, endpoint, result, failure));
        });
    }

    private static void answer(AsyncContext async, String endpoint, Long result, Throwable failure) {
        try {
            HttpServletResponse response = (HttpServletResponse) async.getResponse();
            if (failure != null) {
                response.sendError(HttpServletResponse.SC_INTERNAL_SERVER_ERROR, failure.toString());
            } else {
                byte[] body = (endpoint + " " + result + "\n").getBytes(StandardCharsets.US_ASCII);
                response.setContentType("text/plain");
                response.setContentLength(body.length);
                response.getOutputStream().write(body);
            }
        } catch (IOException e) {
            // the client went away
        } finally {
            async.complete();
        }
    }

    private static long work(String name, String seed, int rounds) {
        switch (name) {
            case "orders":
                return work_orders(seed, rounds);
            case "search":
                return work_search(seed, rounds);
            default:
                return work_report(seed, rounds);
        }
    }

    static long work_orders(String seed, int rounds) {
        return WorkServlet.work_orders(seed, rounds) ^ 1;
    }

    static long work_search(String seed, int rounds) {
        return WorkServlet.work_search(seed, rounds) ^ 2;
    }

    static long work_report(String seed, int rounds) {
        return WorkServlet.work_report(seed, rounds) ^ 3;
    }
}
