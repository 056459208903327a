import java.time.Duration;
import jdk.jfr.consumer.RecordingStream;

/**
 * A JVM with nothing to do: what a profiler costs where the application is idle (most of the
 * time, for most services). Args: seconds to stay idle, and {@code jfr} to start JFR alone (an
 * in-process RecordingStream with jdk.ExecutionSample at {@code -Dperiod} ms, as the jfrctx agent
 * streams it) or {@code none}. Prints "idle" once it is, then sleeps.
 */
public final class IdleJvm {

    private IdleJvm() {
    }

    public static void main(String[] args) throws Exception {
        long seconds = Long.parseLong(args[0]);
        RecordingStream stream = null;
        if (args[1].equals("jfr")) {
            stream = new RecordingStream();
            Duration period = Duration.ofMillis(Long.getLong("period", 20));
            stream.enable("jdk.ExecutionSample").withPeriod(period);
            stream.onEvent("jdk.ExecutionSample", e -> { });
            stream.startAsync();
        }
        System.out.println("idle");
        System.out.flush();
        Thread.sleep(seconds * 1000);
        if (stream != null) {
            stream.close();
        }
    }
}
