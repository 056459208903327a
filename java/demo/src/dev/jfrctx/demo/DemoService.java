package dev.jfrctx.demo;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A small HTTP service whose endpoints cost visibly different amounts of CPU, with a built-in load
 * generator. Every request is handled inside
 * {@code RecordingContext.where(ENDPOINT, path).where(REQUEST, id).build()}, so with the jfrctx
 * agent loaded every CPU sample carries the endpoint and the request id; {@code /report} hands half
 * of its work to a compute pool through a {@link RecordingContext.Snapshot}, so those samples carry
 * the endpoint too.
 *
 * <pre>
 *   /orders   heavy   build, sort and SHA-256 a batch of orders   (about half of the CPU)
 *   /search   medium  regular expressions over a text corpus
 *   /report   light   floating-point series, split over two threads
 *   /health   trivial
 * </pre>
 *
 * <p>Usage: {@code java -cp jfrctx.jar:classes dev.jfrctx.demo.DemoService [seconds=15]
 * [clients=3]}. Listens on 127.0.0.1 on an ephemeral port, drives itself for the given time,
 * stops, and prints the requests served per endpoint. Without the agent the facade is a no-op
 * and the service runs the same.
 */
public final class DemoService {

    static final RecordingContextKey ENDPOINT = RecordingContextKey.forName("endpoint");
    static final RecordingContextKey REQUEST = RecordingContextKey.forName("request");

    /** Results are sunk here so that the JIT keeps the work. */
    static volatile long sink;

    private final HttpServer server;
    private final ExecutorService httpThreads;
    private final ExecutorService computePool;
    private final Map<String, Endpoint> endpoints = new LinkedHashMap<>();
    private final AtomicLong requestIds = new AtomicLong();

    /** One endpoint: its work and what it served. */
    static final class Endpoint {
        final String path;
        final Function<String, String> work;
        final AtomicLong served = new AtomicLong();
        final AtomicLong nanos = new AtomicLong();

        Endpoint(String path, Function<String, String> work) {
            this.path = path;
            this.work = work;
        }
    }

    DemoService() throws IOException {
        httpThreads = Executors.newFixedThreadPool(4, named("demo-http-"));
        computePool = Executors.newFixedThreadPool(2, named("demo-compute-"));
        add("/orders", DemoService::orders);
        add("/search", DemoService::search);
        add("/report", this::report);
        add("/health", q -> "ok");
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
        server.setExecutor(httpThreads);
        server.createContext("/", this::handle);
    }

    private void add(String path, Function<String, String> work) {
        endpoints.put(path, new Endpoint(path, work));
    }

    static ThreadFactory named(String prefix) {
        AtomicLong n = new AtomicLong();
        return r -> {
            Thread t = new Thread(r, prefix + n.getAndIncrement());
            t.setDaemon(true);
            return t;
        };
    }

    int port() {
        return server.getAddress().getPort();
    }

    List<String> paths() {
        return new ArrayList<>(endpoints.keySet());
    }

    void start() {
        server.start();
    }

    void stop() throws InterruptedException {
        server.stop(0);
        httpThreads.shutdown();
        computePool.shutdown();
        httpThreads.awaitTermination(10, TimeUnit.SECONDS);
        computePool.awaitTermination(10, TimeUnit.SECONDS);
    }

    // ---- request handling ------------------------------------------------------------------

    private void handle(HttpExchange exchange) throws IOException {
        try {
            String path = exchange.getRequestURI().getPath();
            Endpoint endpoint = endpoints.get(path);
            if (endpoint == null) {
                reply(exchange, 404, "no such endpoint: " + path + "\n");
                return;
            }
            String id = Long.toString(requestIds.incrementAndGet());
            long start = System.nanoTime();
            try (RecordingContext ctx =
                    RecordingContext.where(ENDPOINT, path).where(REQUEST, id).build()) {
                String body;
                try {
                    body = endpoint.work.apply(exchange.getRequestURI().getQuery());
                } catch (RuntimeException e) {
                    reply(exchange, 500, e + "\n");
                    return;
                }
                reply(exchange, 200, body + "\n");
            }
            endpoint.nanos.addAndGet(System.nanoTime() - start);
            endpoint.served.incrementAndGet();
        } finally {
            exchange.close();
        }
    }

    private static void reply(HttpExchange exchange, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }

    private static long seedOf(String query) {
        return query == null ? 42 : query.hashCode();
    }

    // ---- /orders: heavy ----------------------------------------------------------------------

    static final class Order {
        final long id;
        final String customer;
        final long cents;

        Order(long id, String customer, long cents) {
            this.id = id;
            this.customer = customer;
            this.cents = cents;
        }
    }

    static String orders(String query) {
        List<Order> batch = generateOrders(seedOf(query), 8_000);
        sortOrders(batch);
        byte[] digest = hashOrders(batch);
        sink ^= digest[0];
        return "orders=" + batch.size() + " top=" + batch.get(0).cents + " digest=" + hex(digest, 8);
    }

    static List<Order> generateOrders(long seed, int n) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<Order> batch = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            batch.add(new Order(i, "customer-" + rnd.nextInt(5_000), rnd.nextLong(1_000_000)));
        }
        return batch;
    }

    static void sortOrders(List<Order> batch) {
        batch.sort(Comparator.comparingLong((Order o) -> -o.cents)
                .thenComparing(o -> o.customer)
                .thenComparingLong(o -> o.id));
    }

    static byte[] hashOrders(List<Order> batch) {
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        StringBuilder line = new StringBuilder(64);
        for (Order o : batch) {
            line.setLength(0);
            line.append(o.id).append(',').append(o.customer).append(',').append(o.cents).append('\n');
            sha.update(line.toString().getBytes(StandardCharsets.UTF_8));
        }
        return sha.digest();
    }

    static String hex(byte[] bytes, int n) {
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < n && i < bytes.length; i++) {
            s.append(String.format(Locale.ROOT, "%02x", bytes[i]));
        }
        return s.toString();
    }

    // ---- /search: medium ---------------------------------------------------------------------

    private static final String[] WORDS = {
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
        "sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu",
    };
    private static final Pattern[] QUERIES = {
        Pattern.compile("\\b(a\\w+|\\w+o)\\b\\s+\\b(\\w{5,})\\b"),
        Pattern.compile("(?i)\\b[a-m]\\w*e[a-z]*\\b"),
        Pattern.compile("\\b(\\w+)\\s+\\1\\b"),
    };
    private static final String CORPUS = buildCorpus(40_000);

    static String buildCorpus(int words) {
        SplittableRandom rnd = new SplittableRandom(7);
        StringBuilder s = new StringBuilder(words * 7);
        for (int i = 0; i < words; i++) {
            s.append(WORDS[rnd.nextInt(WORDS.length)]);
            s.append(i % 13 == 12 ? ".\n" : " ");
        }
        return s.toString();
    }

    static String search(String query) {
        long seed = seedOf(query);
        int start = (int) Math.floorMod(seed, (long) (CORPUS.length() / 2));
        String window = CORPUS.substring(start, start + CORPUS.length() / 25);
        int hits = 0;
        for (Pattern p : QUERIES) {
            hits += countMatches(p, window);
        }
        String[] tokens = window.toUpperCase(Locale.ROOT).split("[\\s.]+");
        Arrays.sort(tokens);
        sink ^= hits;
        return "hits=" + hits + " tokens=" + tokens.length;
    }

    static int countMatches(Pattern p, String text) {
        Matcher m = p.matcher(text);
        int n = 0;
        while (m.find()) {
            n++;
        }
        return n;
    }

    // ---- /report: math, half of it on the compute pool --------------------------------------

    private String report(String query) {
        int n = 24_000;
        double phase = (seedOf(query) & 0xff) / 256.0;
        RecordingContext.Snapshot snapshot = RecordingContext.snapshot();
        Future<Double> half = computePool.submit(
                () -> RecordingContext.callWithSnapshot(() -> series(0, n / 2, phase), snapshot));
        double mine = series(n / 2, n, phase);
        double theirs;
        try {
            theirs = half.get();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        double total = mine + theirs;
        sink ^= Double.doubleToRawLongBits(total);
        return String.format(Locale.ROOT, "report=%.6f", total);
    }

    static double series(int from, int to, double phase) {
        double acc = 0;
        for (int i = from; i < to; i++) {
            double x = i * 1e-4 + phase;
            acc += Math.sin(x) * Math.sqrt(x + 1) / (1 + Math.abs(Math.cos(x * 0.5)));
        }
        return acc;
    }

    // ---- main --------------------------------------------------------------------------------

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 15;
        int clients = args.length > 1 ? Integer.parseInt(args[1]) : 3;

        DemoService service = new DemoService();
        service.start();
        System.out.printf(Locale.ROOT, "DemoService: listening on http://127.0.0.1:%d (%s), "
                + "load: %d clients for %.0f s%n", service.port(), String.join(" ", service.paths()),
                clients, seconds);

        LoadGenerator load = new LoadGenerator(service.port(), clients);
        Map<String, Long> errors = load.run(service.paths(), (long) (seconds * 1000));
        service.stop();

        long total = 0;
        System.out.printf(Locale.ROOT, "%-10s %10s %10s %10s%n", "endpoint", "requests", "mean ms",
                "errors");
        for (Endpoint e : service.endpoints.values()) {
            long served = e.served.get();
            total += served;
            double meanMs = served == 0 ? 0 : e.nanos.get() / 1e6 / served;
            System.out.printf(Locale.ROOT, "%-10s %10d %10.2f %10d%n", e.path, served, meanMs,
                    errors.getOrDefault(e.path, 0L));
        }
        System.out.printf(Locale.ROOT, "DemoService: %d requests in %.1f s, %d client errors%n",
                total, seconds, load.errors());
        System.exit(load.errors() == 0 ? 0 : 1);
    }
}
