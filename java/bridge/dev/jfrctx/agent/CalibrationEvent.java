package dev.jfrctx.agent;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * A JFR event whose start tick is taken between two {@code System.nanoTime()} reads: the agent
 * fits JFR ticks to the nanoTime scale from many of these. Disabled unless the jfrctx stream
 * enables it, so it never appears in other recordings.
 */
@Name("jfrctx.Calibration")
@Label("jfrctx clock calibration")
@Category("jfrctx")
@Description("Brackets a JFR tick between two System.nanoTime() reads")
@Enabled(false)
@StackTrace(false)
public final class CalibrationEvent extends Event {
    /** {@code System.nanoTime()} read just before the event began. */
    @Label("nanoTime before")
    public long before;

    /** {@code System.nanoTime()} read just after the event began (its start tick). */
    @Label("nanoTime after")
    public long after;

    /** Commits one bracket event. */
    public static void bracket() {
        CalibrationEvent e = new CalibrationEvent();
        long b = System.nanoTime();
        e.begin();
        long a = System.nanoTime();
        e.before = b;
        e.after = a;
        e.commit();
    }
}
