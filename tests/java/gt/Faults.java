package gt;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Workload of the fault and exit-path tests (tests/it/faults.rs, tests/it/exit_paths.rs): two worker
 * threads switch between {@code {fault: a}}, {@code {fault: b}} and no context, doing their CPU
 * work in {@code fault_a}, {@code fault_b} and {@code fault_none}; then the JVM ends the way the
 * mode says.
 *
 * <pre>
 *   java gt.Faults MODE [seconds=2]
 *     normal            work, print the summary, return from main (exit 0)
 *     exit3             work, print the summary, System.exit(3)
 *     throw             work, print the summary, throw from main (uncaught: exit 1)
 *     wait              print "faults: ready", then work until killed (at most 120 s)
 *     close-recordings  work, close every JFR recording (the agent's too), work again, return
 *     stack-end         work while contexts are installed at the end of fresh threads' stacks
 *                       ({@link StackEnd}), work again, return
 * </pre>
 *
 * The summary is one JSON line on stdout, printed by main after the workers stopped:
 * {@code {"workload":"Faults","mode":...,"switches":N,"done":true}} (stack-end adds
 * {@code "live"}, {@code "overflows"} and {@code "inside"}). Compiled with
 * {@code --release 17}.
 */
public final class Faults {

    static final RecordingContextKey FAULT = RecordingContextKey.forName("fault");

    static volatile long sink;

    private Faults() {
    }

    static long fault_a(long until) {
        return spin(until, 0x9E3779B97F4A7C15L);
    }

    static long fault_b(long until) {
        return spin(until, 0xD1B54A32D192ED03L);
    }

    static long fault_none(long until) {
        return spin(until, 0x94D049BB133111EBL);
    }

    private static long spin(long until, long seed) {
        long x = seed ^ until;
        do {
            for (int i = 0; i < 200; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
                x ^= x >>> 31;
            }
        } while (System.nanoTime() < until);
        return x;
    }

    /** Two workers switching contexts every ~2 ms until {@code stop} is set. */
    static final class Workers {
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicLong switches = new AtomicLong();
        final List<Thread> threads = new ArrayList<>();

        Workers start() {
            for (int w = 0; w < 2; w++) {
                Thread t = new Thread(this::run, "faults-worker-" + w);
                t.setDaemon(true);
                threads.add(t);
                t.start();
            }
            return this;
        }

        private void run() {
            long local = 0;
            long n = 0;
            while (!stop.get()) {
                long phase = 1_000_000L + (n % 3) * 500_000L;
                try (RecordingContext c = RecordingContext.where(FAULT, "a").build()) {
                    local += fault_a(System.nanoTime() + phase);
                }
                try (RecordingContext c = RecordingContext.where(FAULT, "b").build()) {
                    local += fault_b(System.nanoTime() + phase);
                }
                local += fault_none(System.nanoTime() + phase);
                switches.addAndGet(2);
                n++;
            }
            sink = local;
        }

        long stopAndJoin() throws InterruptedException {
            stop.set(true);
            for (Thread t : threads) {
                t.join();
            }
            return switches.get();
        }
    }

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "normal";
        double seconds = args.length > 1 ? Double.parseDouble(args[1]) : 2.0;
        long millis = (long) (seconds * 1000);
        Workers workers = new Workers().start();
        String extra = "";
        switch (mode) {
            case "normal":
            case "exit3":
            case "throw":
                Thread.sleep(millis);
                break;
            case "wait":
                System.out.println("faults: ready");
                System.out.flush();
                Thread.sleep(120_000);
                break;
            case "close-recordings":
                Thread.sleep(millis / 2);
                int closed = 0;
                for (jdk.jfr.Recording r : jdk.jfr.FlightRecorder.getFlightRecorder().getRecordings()) {
                    r.close();
                    closed++;
                }
                System.out.println("faults: closed " + closed + " recording(s)");
                System.out.flush();
                Thread.sleep(millis / 2);
                break;
            case "stack-end":
                extra = "," + StackEnd.run();
                Thread.sleep(millis);
                break;
            default:
                throw new IllegalArgumentException("unknown mode " + mode);
        }
        long switches = workers.stopAndJoin();
        System.out.println("{\"workload\":\"Faults\",\"mode\":\"" + mode + "\",\"switches\":" + switches
                + extra + ",\"done\":true}");
        System.out.flush();
        if (mode.equals("exit3")) {
            System.exit(3);
        }
        if (mode.equals("throw")) {
            throw new IllegalStateException("faults: uncaught exception from main, as asked");
        }
    }
}
