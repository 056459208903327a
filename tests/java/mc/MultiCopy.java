package mc;

import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiFunction;

/**
 * Several copies of the facade side by side, as in an application server where two web
 * applications each have {@code jfrctx.jar} in {@code WEB-INF/lib}, or a plugin system, or an
 * application that shades the facade.
 *
 * <p>Each copy is a {@link URLClassLoader} over the compiled facade and workloads whose parent is
 * the platform loader, so {@code dev.jfrctx.*} and {@link Plugin} are loaded again (own
 * {@code ThreadLocal}s, own caches, own agent link); the application loader's copy is one more.
 * Copies talk to each other only through {@code java.base} types ({@link BiFunction},
 * {@link Runnable}).
 *
 * <p>Ground truth: a copy's work method {@code mc_cK} runs inside the context that copy K
 * installed ({@code {mc: cK}}), {@code mc_cKdeep} inside copy K's own nested one
 * ({@code {mc: cK, deep: yes}}), and {@code mc_none} outside every scope ({@code {}}). Each
 * iteration nests the copies in a random order on the same thread, so that closing a copy's scope
 * must restore a context another copy installed.
 *
 * <p>Usage: {@code java mc.MultiCopy [seconds=6] [copies=2] [platform|virtual] [redeploys=0]}.
 * With {@code redeploys > 0} the run instead redeploys: that many times, a new set of copies is
 * loaded, used by its own short-lived threads (as a server renews its threads when a web
 * application stops), and dropped; the run checks that every dropped class loader is collected.
 * Prints one JSON line summarising the work; exits non-zero on any failure.
 */
public final class MultiCopy {

    static final int WORKERS = 3;

    private static final AtomicReference<Throwable> FAILURE = new AtomicReference<>();
    private static final AtomicLong ITERATIONS = new AtomicLong();

    private MultiCopy() {
    }

    /** One copy of the facade in its own class loader; only java.base types cross. */
    public static final class Plugin implements BiFunction<Integer, Runnable, Runnable> {

        static final dev.jfrctx.RecordingContextKey MC = dev.jfrctx.RecordingContextKey.forName("mc");
        static final dev.jfrctx.RecordingContextKey DEEP = dev.jfrctx.RecordingContextKey.forName("deep");

        static volatile long sink;

        private final int copy;

        public Plugin(Integer copy) {
            this.copy = copy;
        }

        /**
         * A step of {@code micros} of work per phase, inside this copy's context: {@code mc_cK},
         * then {@code inner} (another copy's step, or nothing), then this copy's own nested
         * context, then {@code mc_cK} again.
         */
        @Override
        public Runnable apply(Integer micros, Runnable inner) {
            return () -> {
                long d = micros * 1000L;
                try (dev.jfrctx.RecordingContext c = dev.jfrctx.RecordingContext.where(MC, "c" + copy).build()) {
                    work(copy, false, d);
                    inner.run();
                    try (dev.jfrctx.RecordingContext deep = dev.jfrctx.RecordingContext.where(DEEP, "yes").build()) {
                        work(copy, true, d);
                    }
                    work(copy, false, d);
                }
            };
        }

        static void work(int copy, boolean deep, long nanos) {
            long until = System.nanoTime() + nanos;
            switch (copy * 2 + (deep ? 1 : 0)) {
                case 0: sink ^= mc_c0(until); break;
                case 1: sink ^= mc_c0deep(until); break;
                case 2: sink ^= mc_c1(until); break;
                case 3: sink ^= mc_c1deep(until); break;
                case 4: sink ^= mc_c2(until); break;
                case 5: sink ^= mc_c2deep(until); break;
                default: throw new IllegalStateException("copy " + copy);
            }
        }

        // The work methods only compute; tests keep them out of line (CompileCommand=dontinline).
        static long mc_c0(long until) { return spin(until, 1); }
        static long mc_c0deep(long until) { return spin(until, 2); }
        static long mc_c1(long until) { return spin(until, 3); }
        static long mc_c1deep(long until) { return spin(until, 4); }
        static long mc_c2(long until) { return spin(until, 5); }
        static long mc_c2deep(long until) { return spin(until, 6); }
    }

    static long mc_none(long until) {
        return spin(until, 7);
    }

    static long spin(long until, long seed) {
        long x = seed * 0x9E3779B97F4A7C15L;
        do {
            for (int i = 0; i < 128; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
                x ^= x >>> 29;
            }
        } while (System.nanoTime() < until);
        return x;
    }

    static volatile long noneSink;

    /** Loads {@code n} copies; {@code loaders} receives them (for the collection check). */
    static List<Object> load(int n, List<URLClassLoader> loaders) throws Exception {
        URL here = MultiCopy.class.getProtectionDomain().getCodeSource().getLocation();
        List<Object> plugins = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            URLClassLoader l = new URLClassLoader("copy" + k, new URL[] {here},
                    ClassLoader.getPlatformClassLoader());
            loaders.add(l);
            Class<?> c = Class.forName("mc.MultiCopy$Plugin", true, l);
            if (c == Plugin.class || c.getClassLoader() != l) {
                throw new AssertionError("copy " + k + " was not loaded by its own loader");
            }
            plugins.add(c.getConstructor(Integer.class).newInstance(k));
        }
        return plugins;
    }

    /** One iteration on the calling thread: the copies nested in a random order, then none. */
    @SuppressWarnings("unchecked")
    static void iterate(List<Object> plugins, SplittableRandom rnd) {
        int n = plugins.size();
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        for (int i = n - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        // Sometimes only a prefix: a copy used alone on this thread for this iteration.
        int depth = 1 + rnd.nextInt(n);
        int micros = 100 + rnd.nextInt(900);
        Runnable step = () -> { };
        for (int i = depth - 1; i >= 0; i--) {
            step = ((BiFunction<Integer, Runnable, Runnable>) plugins.get(order[i])).apply(micros, step);
        }
        step.run();
        noneSink ^= mc_none(System.nanoTime() + micros * 1000L);
        ITERATIONS.incrementAndGet();
    }

    static Thread start(ThreadFactory f, Runnable r) {
        Thread t = f.newThread(r);
        t.start();
        return t;
    }

    static void runWorkers(ThreadFactory factory, long until, List<Object> plugins, long seed)
            throws InterruptedException {
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < WORKERS; w++) {
            final long s = seed + w;
            threads.add(start(factory, () -> {
                try {
                    SplittableRandom rnd = new SplittableRandom(s);
                    while (System.nanoTime() < until && FAILURE.get() == null) {
                        iterate(plugins, rnd);
                        Thread.yield(); // lets every virtual worker onto the carriers
                    }
                } catch (Throwable t) {
                    FAILURE.compareAndSet(null, t);
                }
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
    }

    public static void main(String[] args) throws Exception {
        int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 6;
        int copies = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        String mode = args.length > 2 ? args[2] : "platform";
        int redeploys = args.length > 3 ? Integer.parseInt(args[3]) : 0;
        ThreadFactory factory = "virtual".equals(mode)
                ? gt.GroundTruth.virtualFactory("mc-")
                : r -> new Thread(r, "mc-worker");

        long collected = 0;
        if (redeploys == 0) {
            runWorkers(factory, System.nanoTime() + seconds * 1_000_000_000L,
                    load(copies, new ArrayList<>()), 42);
        } else {
            long per = seconds * 1_000_000_000L / redeploys;
            List<java.lang.ref.WeakReference<ClassLoader>> dropped = new ArrayList<>();
            for (int r = 0; r < redeploys && FAILURE.get() == null; r++) {
                List<URLClassLoader> loaders = new ArrayList<>();
                List<Object> plugins = load(copies, loaders);
                runWorkers(factory, System.nanoTime() + per, plugins, 1000L * r);
                for (URLClassLoader l : loaders) {
                    dropped.add(new java.lang.ref.WeakReference<>(l));
                    l.close();
                }
                plugins = null;
                loaders = null;
            }
            for (int i = 0; i < 50; i++) {
                System.gc();
                collected = dropped.stream().filter(w -> w.get() == null).count();
                if (collected == dropped.size()) {
                    break;
                }
                Thread.sleep(100);
            }
            if (collected != dropped.size()) {
                FAILURE.compareAndSet(null, new AssertionError(
                        (dropped.size() - collected) + " of " + dropped.size()
                                + " dropped class loaders were never collected"));
            }
        }
        Throwable f = FAILURE.get();
        if (f != null) {
            f.printStackTrace();
            System.exit(1);
        }
        System.out.println("{\"iterations\":" + ITERATIONS.get() + ",\"copies\":" + copies
                + ",\"mode\":\"" + mode + "\",\"redeploys\":" + redeploys
                + ",\"collected_loaders\":" + collected + "}");
    }
}
