package dev.jfrctx.bench.server;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The per-request filter, switchable per configuration ({@code --filter}):
 *
 * <ul>
 *   <li>{@code off}: installs nothing (the filter is still in the chain);
 *   <li>{@code snapshot}: activates a jfrctx snapshot of {@code {endpoint}} built once per endpoint;
 *   <li>{@code endpoint}: builds a new jfrctx context {@code {endpoint}} per request (a map seen
 *       before);
 *   <li>{@code request}: builds {@code {endpoint, request=<counter>}} per request (a map never
 *       seen before, as in {@code examples/servlet}'s filter);
 *   <li>{@code pyroscope-endpoint}, {@code pyroscope-request}: the same labels through
 *       Pyroscope's Java agent ({@code io.pyroscope.labels.v2.ScopedContext}, see
 *       {@code bench/server/pyroscope/}).
 * </ul>
 *
 * Two modes {@code A/B} alternate in phases of one JVM ({@link Phases}).
 *
 * The endpoint is the path after {@code /app}. The labels of a Pyroscope request are kept in a
 * request attribute so that the hand-off endpoint can install them on the pool thread, as
 * {@code RecordingContext.wrap} does for jfrctx.
 */
public final class BenchFilter implements Filter {
    static final RecordingContextKey ENDPOINT = RecordingContextKey.forName("endpoint");
    static final RecordingContextKey REQUEST = RecordingContextKey.forName("request");
    static final String LABELS_ATTRIBUTE = "bench.labels";

    /** The current mode: the only one, or the phase's ({@link #phase}). */
    private volatile int mode;
    private final int[] modes;
    private final AtomicLong requests = new AtomicLong();
    private final ConcurrentHashMap<String, RecordingContext.Snapshot> snapshots = new ConcurrentHashMap<>();
    private final Labeler labeler;

    private static final int OFF = 0;
    private static final int SNAPSHOT = 1;
    private static final int ENDPOINT_ONLY = 2;
    private static final int REQUEST_ID = 3;
    private static final int PYRO_ENDPOINT = 4;
    private static final int PYRO_REQUEST = 5;

    /** {@code filter}: one mode, or two {@code A/B} that {@link Phases} alternates. */
    BenchFilter(String filter) {
        String[] names = filter.split("/", -1);
        if (names.length > 2) {
            throw new IllegalArgumentException("--filter " + filter + ": one mode or two (A/B)");
        }
        modes = new int[names.length];
        boolean pyroscope = false;
        for (int i = 0; i < names.length; i++) {
            modes[i] = parse(names[i]);
            pyroscope |= modes[i] >= PYRO_ENDPOINT;
        }
        this.mode = modes[0];
        this.labeler = pyroscope ? Labeler.pyroscope() : null;
    }

    private static int parse(String mode) {
        switch (mode) {
            case "off": return OFF;
            case "snapshot": return SNAPSHOT;
            case "endpoint": return ENDPOINT_ONLY;
            case "request": return REQUEST_ID;
            case "pyroscope-endpoint": return PYRO_ENDPOINT;
            case "pyroscope-request": return PYRO_REQUEST;
            default: throw new IllegalArgumentException("unknown --filter mode '" + mode + "'");
        }
    }

    /** Switches to mode {@code i} of {@code A/B} (0 or 1). */
    void phase(int i) {
        mode = modes[i];
    }

    static String describe(String filter) {
        return filter.contains("pyroscope") ? " pyroscope_labels_enabled=" + Labeler.pyroscope().enabled() : "";
    }

    static String endpoint(HttpServletRequest request) {
        String path = request.getPathInfo();
        return path == null ? "/" : path;
    }

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
            throws IOException, ServletException {
        BenchServer.SERVED.incrementAndGet();
        HttpServletRequest http = (HttpServletRequest) request;
        int mode = this.mode;
        switch (mode) {
            case SNAPSHOT: {
                RecordingContext.Snapshot s = snapshots.get(endpoint(http));
                if (s == null) {
                    s = snapshots.computeIfAbsent(endpoint(http), BenchFilter::snapshotOf);
                }
                if (ContextTimes.ENABLED) {
                    long t0 = System.nanoTime();
                    RecordingContext.Activation a = s.activate();
                    long t1 = System.nanoTime();
                    timed(a, t1 - t0, request, response, chain);
                    return;
                }
                try (RecordingContext.Activation ignored = s.activate()) {
                    chain.doFilter(request, response);
                }
                return;
            }
            case ENDPOINT_ONLY:
                try (RecordingContext ignored = RecordingContext.where(ENDPOINT, endpoint(http)).build()) {
                    chain.doFilter(request, response);
                }
                return;
            case REQUEST_ID:
                if (ContextTimes.ENABLED) {
                    long t0 = System.nanoTime();
                    RecordingContext c = requestContext(http);
                    long t1 = System.nanoTime();
                    timed(c, t1 - t0, request, response, chain);
                    return;
                }
                try (RecordingContext ignored = requestContext(http)) {
                    chain.doFilter(request, response);
                }
                return;
            case PYRO_ENDPOINT:
            case PYRO_REQUEST: {
                if (ContextTimes.ENABLED) {
                    // Timed as jfrctx's `request` mode is: the labels built and installed.
                    long t0 = System.nanoTime();
                    Object labels = pyroscopeLabels(http, mode);
                    AutoCloseable scope = labeler.open(labels);
                    long t1 = System.nanoTime();
                    request.setAttribute(LABELS_ATTRIBUTE, labels);
                    timed(scope, t1 - t0, request, response, chain);
                    return;
                }
                Object labels = pyroscopeLabels(http, mode);
                request.setAttribute(LABELS_ATTRIBUTE, labels);
                try (AutoCloseable ignored = labeler.open(labels)) {
                    chain.doFilter(request, response);
                } catch (IOException | ServletException | RuntimeException e) {
                    throw e;
                } catch (Exception e) {
                    throw new ServletException(e);
                }
                return;
            }
            default:
                chain.doFilter(request, response);
        }
    }

    /** Pyroscope's labels for this request: the endpoint, and the request's number. */
    private Object pyroscopeLabels(HttpServletRequest http, int mode) {
        return mode == PYRO_ENDPOINT
                ? labeler.labels(endpoint(http), null)
                : labeler.labels(endpoint(http), Long.toString(requests.incrementAndGet()));
    }

    /** Builds and installs {@code {endpoint, request=<counter>}}: a map never seen before. */
    private RecordingContext requestContext(HttpServletRequest http) {
        return RecordingContext.where(ENDPOINT, endpoint(http))
                .where(REQUEST, Long.toString(requests.incrementAndGet()))
                .build();
    }

    /**
     * Runs the chain in the context {@code scope} opened in {@code openNs}, then closes it and
     * records the opening and the closing together ({@link ContextTimes}).
     */
    private static void timed(AutoCloseable scope, long openNs, ServletRequest request,
            ServletResponse response, FilterChain chain) throws IOException, ServletException {
        try {
            chain.doFilter(request, response);
        } finally {
            long t2 = System.nanoTime();
            try {
                scope.close();
            } catch (Exception e) { // the facade's scopes throw only unchecked exceptions
                throw new IllegalStateException(e);
            }
            long t3 = System.nanoTime();
            ContextTimes.record(openNs, t3 - t2);
        }
    }

    private static RecordingContext.Snapshot snapshotOf(String endpoint) {
        try (RecordingContext ignored = RecordingContext.where(ENDPOINT, endpoint).build()) {
            return RecordingContext.snapshot();
        }
    }
}
