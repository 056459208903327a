package gt;

/**
 * One thread's descents to the end of its stack, shared by the end-of-stack workloads
 * ({@link StackEnd}, and the OTel bridge's {@code StackEndApp}): it measures how deep a plain
 * recursion goes, then descends to a little less than that again and again, each time one level
 * less deep, and runs {@link #bottom} there, which recurses doing the work under test until a
 * {@link StackOverflowError}. Across the descents the error lands at every point of that work.
 * Counts the overflows and those thrown inside jfrctx code (the facade, the bridge: a
 * {@code dev.jfrctx} frame above the workload's own).
 */
public abstract class StackDescent {

    private final String self = getClass().getName();
    private int reached;
    private int overflows;
    private int inside;

    /**
     * The work under test at level {@code level}, recursing until the stack ends.
     *
     * @param level levels below the descent's bottom
     * @return anything (keeps the recursion from being optimized away)
     */
    protected abstract long bottom(int level);

    /** Called after each descent, when the thread should be back where it started. */
    protected abstract void afterDescent();

    /**
     * Measures the plain depth, then makes {@code descents} descents.
     *
     * @param descents how many, each one level less deep than the last
     */
    public final void descend(int descents) {
        descendTo(Integer.MAX_VALUE);
        int end = reached;
        for (int j = 1; j <= descents; j++) {
            descendTo(Math.max(0, end - j));
        }
    }

    /** @return the overflows caught */
    public final int overflows() {
        return overflows;
    }

    /** @return the overflows thrown inside jfrctx code */
    public final int inside() {
        return inside;
    }

    private long plain(int depth, int limit) {
        reached = depth;
        if (depth >= limit) {
            return bottom(0);
        }
        return plain(depth + 1, limit) + 1;
    }

    private void descendTo(int limit) {
        try {
            plain(0, limit);
        } catch (StackOverflowError e) {
            overflows++;
            if (thrownInside(e)) {
                inside++;
            }
        }
        afterDescent();
    }

    private boolean thrownInside(StackOverflowError e) {
        for (StackTraceElement f : e.getStackTrace()) {
            String c = f.getClassName();
            if (c.startsWith(self) || c.equals(StackDescent.class.getName())) {
                return false; // reached the workload's own frames
            }
            if (c.startsWith("dev.jfrctx.")) {
                return true;
            }
        }
        return false;
    }
}
