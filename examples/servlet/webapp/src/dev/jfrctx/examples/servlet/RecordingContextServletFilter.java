package dev.jfrctx.examples.servlet;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletMapping;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Installs a jfrctx {@code RecordingContext} around every request: {@code endpoint} is the
 * servlet mapping the request matched ({@code /orders}, not {@code /orders/42}: one value per
 * route, so that profiles group by route), {@code request} is the client's {@code X-Request-Id}
 * header when it sends a usable one, else a counter. Every CPU sample taken while the request runs
 * on this thread carries both.
 *
 * <p>Map it first, on {@code /*}, so that it wraps every other filter and the servlet. A request
 * that goes asynchronous ({@code startAsync}) leaves this filter before its work ends: hand the
 * work a {@code RecordingContext.snapshot()} (or an executor from {@code RecordingContext.wrap})
 * so that it keeps the context on the thread that finishes it.
 *
 * <p>Works the same whether the facade jar is on the server's class path (Tomcat's {@code lib/})
 * or in the web application ({@code WEB-INF/lib}); without the agent it costs next to nothing.
 */
public final class RecordingContextServletFilter implements Filter {
    static final RecordingContextKey ENDPOINT = RecordingContextKey.forName("endpoint");
    static final RecordingContextKey REQUEST = RecordingContextKey.forName("request");

    private final AtomicLong requests = new AtomicLong();

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
            throws IOException, ServletException {
        if (!(request instanceof HttpServletRequest)) {
            chain.doFilter(request, response);
            return;
        }
        HttpServletRequest http = (HttpServletRequest) request;
        try (RecordingContext ignored = RecordingContext.where(ENDPOINT, endpoint(http))
                .where(REQUEST, requestId(http))
                .build()) {
            chain.doFilter(request, response);
        }
    }

    /** The route: the servlet mapping's pattern, else the servlet path, else {@code /}. */
    static String endpoint(HttpServletRequest request) {
        HttpServletMapping mapping = request.getHttpServletMapping();
        String pattern = mapping == null ? null : mapping.getPattern();
        if (pattern != null && !pattern.isEmpty()) {
            return pattern;
        }
        String path = request.getServletPath();
        return path == null || path.isEmpty() ? "/" : path;
    }

    private String requestId(HttpServletRequest request) {
        String id = request.getHeader("X-Request-Id");
        if (id != null && !id.isEmpty() && id.length() <= 128) {
            return id;
        }
        return Long.toString(requests.incrementAndGet());
    }
}
