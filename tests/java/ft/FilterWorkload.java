package ft;

import dev.jfrctx.ContextualSample;
import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextFilter;
import dev.jfrctx.RecordingContextKey;
import dev.jfrctx.Samples;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import jdk.jfr.EventType;
import jdk.jfr.FlightRecorder;

/**
 * Workload for tests/it/filter_listener.rs. Four worker threads burn CPU in methods whose name says
 * which context is installed around them (contexts are opened and closed outside the methods):
 *
 * <pre>
 *   ft_acme  {ft: acme, tenant: acme}    ft_other {ft: other, tenant: other}
 *   ft_plain {ft: plain}                 ft_none  {}
 * </pre>
 *
 * Modes: {@code phases SAMPLER_EVENT} sets a sequence of filters through the facade, each followed by 2 s of
 * work and 2 s of idling, printing one JSON line per phase ({@code spec}, {@code start},
 * {@code work_end} on the nanoTime scale); {@code option} just works 3 s (the filter comes from
 * the agent option); {@code listener} registers listeners, works 3 s, idles 3 s and prints what
 * they received.
 */
public final class FilterWorkload {
    static final RecordingContextKey FT = RecordingContextKey.forName("ft");
    static final RecordingContextKey TENANT = RecordingContextKey.forName("tenant");

    static volatile long SINK;
    static volatile boolean working;
    static volatile boolean stop;

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "phases";
        Thread[] workers = {
            worker("acme"), worker("other"), worker("plain"), worker("none"),
        };
        for (Thread t : workers) {
            t.start();
        }
        switch (mode) {
            case "phases":
                phases(args[1]);
                break;
            case "option":
                work(3000);
                break;
            case "listener":
                listener();
                break;
            case "blocking":
                blocking();
                break;
            default:
                throw new IllegalArgumentException(mode);
        }
        stop = true;
        for (Thread t : workers) {
            t.join();
        }
    }

    /** {@code sampler}: the CPU sample event the agent records on this JDK. */
    static void phases(String sampler) throws Exception {
        EventType exec = null;
        for (EventType t : FlightRecorder.getFlightRecorder().getEventTypes()) {
            if (t.getName().equals(sampler)) {
                exec = t;
            }
        }
        if (exec == null) {
            throw new IllegalStateException("no event type " + sampler);
        }
        RecordingContextFilter[] filters = {
            create().forAllTypes().hasContext().build(),
            create().forAllTypes().hasNoContext().build(),
            create().forAllTypes().hasKey(TENANT).build(),
            create().forAllTypes().hasEntry(TENANT, "acme").build(),
            create().forAllTypes().hasNoContext()
                    .forType(exec).hasKey(TENANT).hasEntry(FT, "other").build(),
            create().forAllTypes().hasContext().forType(sampler).reset().build(),
            null,
        };
        Thread.sleep(2500); // calibration, stream running
        for (RecordingContextFilter f : filters) {
            RecordingContextFilter.Config.setContextFilter(f);
            long start = System.nanoTime();
            work(2000);
            long end = System.nanoTime();
            System.out.println("{\"spec\":\"" + (f == null ? "" : f) + "\",\"start\":" + start
                    + ",\"work_end\":" + end + "}");
            Thread.sleep(2000);
        }
    }

    static void listener() throws Exception {
        Map<String, AtomicLong> perFt = new ConcurrentHashMap<>();
        AtomicLong counted = new AtomicLong();
        AtomicLong thrown = new AtomicLong();
        AtomicLong burned = new AtomicLong();
        AtomicLong selfSeen = new AtomicLong();
        AtomicLong wrongThread = new AtomicLong();
        Consumer<ContextualSample> counter = s -> {
            counted.incrementAndGet();
            if (!Thread.currentThread().getName().equals("jfrctx-listeners")) {
                wrongThread.incrementAndGet();
            }
            if (s.threadName().equals("jfrctx-listeners")) {
                selfSeen.incrementAndGet();
            }
            String ft = s.context() != null ? s.context().get("ft") : null;
            if (ft != null) {
                perFt.computeIfAbsent(ft, k -> new AtomicLong()).incrementAndGet();
            }
        };
        Consumer<ContextualSample> thrower = s -> {
            thrown.incrementAndGet();
            throw new IllegalStateException("listener failure on purpose");
        };
        Consumer<ContextualSample> burner = s -> {
            burned.incrementAndGet();
            // Installs a context and burns CPU on the listener thread: its samples must never
            // come back to the listeners.
            try (RecordingContext c = RecordingContext.where(FT, "listener").build()) {
                ft_listener(200_000);
            }
        };
        Samples.addListener(counter);
        Samples.addListener(thrower);
        Samples.addListener(burner);
        Thread.sleep(2500);
        work(3000);
        Thread.sleep(3000);
        Samples.removeListener(burner);
        Samples.removeListener(thrower);
        Samples.removeListener(counter);
        StringBuilder sb = new StringBuilder("{\"per_ft\":{");
        Map<String, AtomicLong> sorted = new TreeMap<>(perFt);
        boolean first = true;
        for (Map.Entry<String, AtomicLong> e : sorted.entrySet()) {
            sb.append(first ? "" : ",").append('"').append(e.getKey()).append("\":").append(e.getValue());
            first = false;
        }
        sb.append("},\"counted\":").append(counted).append(",\"thrown\":").append(thrown)
                .append(",\"burned\":").append(burned).append(",\"self_seen\":").append(selfSeen)
                .append(",\"wrong_thread\":").append(wrongThread).append('}');
        System.out.println(sb);
    }

    /**
     * A listener that blocks forever on its first sample, left registered at exit: the
     * application must still end normally and on time.
     */
    static void blocking() throws Exception {
        AtomicLong seen = new AtomicLong();
        Samples.addListener(s -> {
            seen.incrementAndGet();
            while (true) {
                java.util.concurrent.locks.LockSupport.park();
            }
        });
        Thread.sleep(2500);
        work(2000);
        Thread.sleep(1500);
        System.out.println("{\"seen\":" + seen + "}");
    }

    static RecordingContextFilter.Builder create() {
        return RecordingContextFilter.Config.createFilter();
    }

    static void work(long millis) throws InterruptedException {
        working = true;
        Thread.sleep(millis);
        working = false;
        Thread.sleep(50); // let the current stretches end
    }

    static Thread worker(String kind) {
        Thread t = new Thread(() -> {
            while (!stop) {
                if (!working) {
                    sleep(5);
                    continue;
                }
                switch (kind) {
                    case "acme":
                        try (RecordingContext c = RecordingContext.where(FT, "acme").where(TENANT, "acme").build()) {
                            ft_acme(300_000);
                        }
                        break;
                    case "other":
                        try (RecordingContext c = RecordingContext.where(FT, "other").where(TENANT, "other").build()) {
                            ft_other(300_000);
                        }
                        break;
                    case "plain":
                        try (RecordingContext c = RecordingContext.where(FT, "plain").build()) {
                            ft_plain(300_000);
                        }
                        break;
                    default:
                        ft_none(300_000);
                }
            }
        }, "ft-" + kind);
        t.setDaemon(true);
        return t;
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static long burn(int n) {
        long h = SINK;
        for (int i = 0; i < n; i++) {
            h = h * 6364136223846793005L + 1442695040888963407L;
            h ^= h >>> 29;
        }
        return h;
    }

    static void ft_acme(int n) {
        SINK += burn(n);
    }

    static void ft_other(int n) {
        SINK += burn(n);
    }

    static void ft_plain(int n) {
        SINK += burn(n);
    }

    static void ft_none(int n) {
        SINK += burn(n);
    }

    static void ft_listener(int n) {
        SINK += burn(n);
    }
}
