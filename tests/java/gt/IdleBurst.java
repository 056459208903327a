package gt;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;

/**
 * Quiet spells, each followed by a burst of context switches on the main thread: the agent's
 * worker stretches its sleep while every ring is idle, and the burst must not outrun it. Args:
 * cycles, quiet milliseconds, switch pairs per burst, nanoseconds spun between two switches.
 * Prints the transitions written.
 */
public final class IdleBurst {

    private IdleBurst() {
    }

    public static void main(String[] args) throws InterruptedException {
        int cycles = Integer.parseInt(args[0]);
        long quietMs = Long.parseLong(args[1]);
        int pairs = Integer.parseInt(args[2]);
        long spinNs = Long.parseLong(args[3]);
        RecordingContextKey key = RecordingContextKey.forName("gt");
        RecordingContext.Builder burst = RecordingContext.where(key, "burst");
        long transitions = 0;
        for (int c = 0; c < cycles; c++) {
            Thread.sleep(quietMs);
            for (int i = 0; i < pairs; i++) {
                try (RecordingContext ctx = burst.build()) {
                    spin(spinNs);
                }
                spin(spinNs);
                transitions += 2;
            }
        }
        System.out.println("transitions " + transitions);
    }

    private static void spin(long ns) {
        long end = System.nanoTime() + ns;
        while (System.nanoTime() < end) {
            Thread.onSpinWait();
        }
    }
}
