package dev.jfrctx.demo;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Drives the demo service from a few client threads, on 127.0.0.1 only, for a bounded time.
 * Each client walks a fixed mix of endpoints (every endpoint equally often, in a shuffled order),
 * so the CPU each endpoint takes follows from its cost per request.
 */
final class LoadGenerator {

    private final int port;
    private final int clients;
    private final AtomicLong errors = new AtomicLong();
    private final Map<String, AtomicLong> errorsByPath = new ConcurrentHashMap<>();

    LoadGenerator(int port, int clients) {
        this.port = port;
        this.clients = clients;
    }

    long errors() {
        return errors.get();
    }

    /**
     * Sends requests until {@code millis} have passed; returns the client-side errors per path.
     */
    Map<String, Long> run(List<String> paths, long millis) throws InterruptedException {
        HttpClient http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5))
                .build();
        long deadline = System.nanoTime() + millis * 1_000_000L;
        List<Thread> threads = new ArrayList<>();
        for (int c = 0; c < clients; c++) {
            int client = c;
            Thread t = new Thread(() -> drive(http, paths, client, deadline), "demo-client-" + c);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        Map<String, Long> result = new TreeMap<>();
        errorsByPath.forEach((k, v) -> result.put(k, v.get()));
        return result;
    }

    private void drive(HttpClient http, List<String> paths, int client, long deadline) {
        SplittableRandom rnd = new SplittableRandom(1000 + client);
        String[] order = paths.toArray(new String[0]);
        long n = 0;
        while (System.nanoTime() < deadline) {
            // a fresh shuffled round of all endpoints
            for (int i = order.length - 1; i > 0; i--) {
                int j = rnd.nextInt(i + 1);
                String tmp = order[i];
                order[i] = order[j];
                order[j] = tmp;
            }
            for (String path : order) {
                if (System.nanoTime() >= deadline) {
                    break;
                }
                URI uri = URI.create("http://127.0.0.1:" + port + path + "?q=" + client + "-" + n++);
                HttpRequest request = HttpRequest.newBuilder(uri)
                        .timeout(Duration.ofSeconds(10))
                        .GET()
                        .build();
                try {
                    HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
                    if (response.statusCode() != 200) {
                        error(path);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                } catch (Exception e) {
                    error(path);
                }
            }
        }
    }

    private void error(String path) {
        errors.incrementAndGet();
        errorsByPath.computeIfAbsent(path, k -> new AtomicLong()).incrementAndGet();
    }
}
