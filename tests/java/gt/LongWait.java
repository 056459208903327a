package gt;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;

/**
 * Waits longer than the agent's retention ({@code jdk.JavaMonitorWait}): three platform threads
 * each call {@code Object.wait(millis)} once, in {@code gt_wait}:
 *
 * <ul>
 *   <li>{@code never-ctx} never installs a context: its wait must come out {@code {}};
 *   <li>{@code closed-ctx} works inside {gt: before}, closes it, then waits: {@code {}};
 *   <li>{@code in-ctx} waits inside {gt: waiting}: {gt: waiting}.
 * </ul>
 *
 * <p>Usage: {@code java gt.LongWait [millis=4500]}. Prints one JSON summary line.
 */
public final class LongWait {

    static final RecordingContextKey GT = RecordingContextKey.forName("gt");

    private LongWait() {
    }

    static void gt_wait(long millis) throws InterruptedException {
        Object lock = new Object();
        long until = System.currentTimeMillis() + millis;
        synchronized (lock) {
            // One wait of the whole length (a spurious wake-up would split it: wait again).
            for (long left = millis; left > 0; left = until - System.currentTimeMillis()) {
                lock.wait(left);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 4500;
        // The agent starts its recording asynchronously: a wait begun before would not be seen.
        Thread.sleep(1000);
        Thread never = new Thread(() -> run(() -> gt_wait(millis)), "never-ctx");
        Thread closed = new Thread(() -> run(() -> {
            try (RecordingContext ctx = RecordingContext.where(GT, "before").build()) {
                Thread.sleep(50);
            }
            gt_wait(millis);
        }), "closed-ctx");
        Thread in = new Thread(() -> run(() -> {
            try (RecordingContext ctx = RecordingContext.where(GT, "waiting").build()) {
                gt_wait(millis);
            }
        }), "in-ctx");
        for (Thread t : new Thread[] {never, closed, in}) {
            t.start();
        }
        for (Thread t : new Thread[] {never, closed, in}) {
            t.join();
        }
        // JDK 17 may not flush the last second before exit: let the wait events out first.
        Thread.sleep(1500);
        System.out.println("{\"workload\":\"LongWait\",\"millis\":" + millis + "}");
    }

    interface Body {
        void run() throws Exception;
    }

    static void run(Body body) {
        try {
            body.run();
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
    }
}
