package gt;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import dev.jfrctx.internal.AgentLink;
import dev.jfrctx.internal.ContextData;
import dev.jfrctx.internal.ThreadState;

/**
 * Mode {@code stack-end} of {@link Faults}: contexts built and installed where a thread's stack
 * ends. Each round starts a fresh thread (a small stack, so it is quick) that makes 48
 * {@link StackDescent descents} and at the bottom of each builds never-seen maps and installs
 * them, one more per level, until a {@link StackOverflowError}: the error lands at every point
 * of the facade's first-use and per-scope paths (the ring's registration, numbering a map, the
 * ring write, the Cleaner) across the rounds. Then the thread works in {@code fault_a} under exactly {@code {fault: a}}: its
 * contexts must still be recorded.
 *
 * <p>The result, for the summary line: whether the agent link is still live, how many overflows
 * were caught, how many of them were thrown inside the facade ({@code dev.jfrctx} frames on top
 * of the trace), and after how many descents the thread still had a scope open. That happens
 * when the overflow interrupts a scope's close before it changes anything (its frames deeper
 * than the open's were, e.g. a compiled frame deoptimized to run the exception handler in the
 * interpreter); such a scope stays open until an enclosing one closes, as OTel's own scopes do.
 */
final class StackEnd extends StackDescent {

    static final RecordingContextKey DEPTH = RecordingContextKey.forName("depth");

    /** Rounds: fresh threads. */
    private static final int ROUNDS = 24;
    /** Descents per round, each one level less deep than the last. */
    private static final int DESCENTS = 48;

    private int leaked;
    private long fresh;

    private StackEnd() {
    }

    /** One never-seen map per level, installed, until the stack ends. */
    @Override
    protected long bottom(int level) {
        try (RecordingContext c = RecordingContext.where(Faults.FAULT, "deep")
                .where(DEPTH, Long.toString(fresh++)).build()) {
            return bottom(level + 1) + level;
        }
    }

    @Override
    protected void afterDescent() {
        ThreadState st = ThreadState.current();
        if (st.innermost() != 0 || st.context() != ContextData.EMPTY) {
            leaked++; // a scope whose close the overflow interrupted stayed open (see the class doc)
        }
    }

    private void round() {
        RecordingContext.Snapshot none = RecordingContext.snapshot(); // a fresh thread: empty
        descend(DESCENTS);
        // Exactly {fault: a}, also when an overflow left a scope open (replace, not merge).
        try (RecordingContext.Activation clean = none.activate();
                RecordingContext c = RecordingContext.where(Faults.FAULT, "a").build()) {
            Faults.sink += Faults.fault_a(System.nanoTime() + 40_000_000L);
        }
    }

    /** Runs the rounds; returns the summary's fields (JSON, without braces). */
    static String run() throws InterruptedException {
        int overflows = 0;
        int inside = 0;
        int leaked = 0;
        for (int r = 0; r < ROUNDS; r++) {
            StackEnd s = new StackEnd();
            Thread t = new Thread(null, s::round, "faults-stack-end-" + r, 256 * 1024);
            t.start();
            t.join();
            overflows += s.overflows();
            inside += s.inside();
            leaked += s.leaked;
        }
        return "\"live\":" + AgentLink.isLive() + ",\"overflows\":" + overflows + ",\"inside\":" + inside
                + ",\"leaked\":" + leaked;
    }
}
