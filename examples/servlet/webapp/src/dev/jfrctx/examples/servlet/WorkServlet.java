package dev.jfrctx.examples.servlet;

import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * Three endpoints that burn visibly different amounts of CPU, each in a method named after it:
 * {@code /orders} (heavy) in {@code work_orders}, {@code /search} (medium) in
 * {@code work_search}, {@code /report} (light) in {@code work_report}. The names make the profile
 * readable, and they are the ground truth of {@code tests/it/app_server.rs}: a sample in
 * {@code work_orders} must carry {@code endpoint=/orders}. Run with
 * {@code -XX:CompileCommand=dontinline,dev.jfrctx.examples.servlet.WorkServlet::work_*} when the
 * frames must be exact (C2 could otherwise inline them into {@code doGet}).
 */
public final class WorkServlet extends HttpServlet {
    private static final long serialVersionUID = 1L;

    @Override
    protected void doGet(HttpServletRequest request, HttpServletResponse response)
            throws ServletException, IOException {
        String endpoint = RecordingContextServletFilter.endpoint(request);
        long result;
        switch (endpoint) {
            case "/orders":
                result = work_orders(request.getHeader("X-Request-Id"), 12_000);
                break;
            case "/search":
                result = work_search(request.getHeader("X-Request-Id"), 6_000);
                break;
            case "/report":
                result = work_report(request.getHeader("X-Request-Id"), 3_000);
                break;
            default:
                response.sendError(HttpServletResponse.SC_NOT_FOUND);
                return;
        }
        byte[] body = (endpoint + " " + result + "\n").getBytes(StandardCharsets.US_ASCII);
        response.setContentType("text/plain");
        response.setContentLength(body.length);
        response.getOutputStream().write(body);
    }

    static long work_orders(String seed, int rounds) {
        long h = seed == null ? 1 : seed.hashCode();
        for (int i = 0; i < rounds * 100; i++) {
            h = h * 6364136223846793005L + 1442695040888963407L;
            h ^= h >>> 29;
        }
        return h;
    }

    static long work_search(String seed, int rounds) {
        long h = seed == null ? 2 : seed.hashCode();
        for (int i = 0; i < rounds * 100; i++) {
            h = h * 2862933555777941757L + 3037000493L;
            h ^= h >>> 31;
        }
        return h;
    }

    static long work_report(String seed, int rounds) {
        long h = seed == null ? 3 : seed.hashCode();
        for (int i = 0; i < rounds * 100; i++) {
            h = h * 3935559000370003845L + 2691343689449507681L;
            h ^= h >>> 27;
        }
        return h;
    }
}
