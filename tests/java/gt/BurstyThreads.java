package gt;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * Work in bursts with short gaps, as a thread-per-request server sees it: every gap, a batch of
 * fresh threads each builds and closes one context. Prints how often the agent's worker woke
 * meanwhile: its voluntary context switches a second ({@code /proc/self/task}, Linux). Args:
 * batches, threads per batch, gap in milliseconds.
 */
public final class BurstyThreads {

    private BurstyThreads() {
    }

    public static void main(String[] args) throws Exception {
        int batches = Integer.parseInt(args[0]);
        int perBatch = Integer.parseInt(args[1]);
        long gapMs = Long.parseLong(args[2]);
        RecordingContextKey key = RecordingContextKey.forName("gt");
        RecordingContext.Builder request = RecordingContext.where(key, "request");
        Runnable task = () -> {
            try (RecordingContext ctx = request.build()) {
                Thread.onSpinWait();
            }
        };
        burst(task, 20, perBatch, gapMs); // warm-up: the agent's first rounds, the JIT
        Path worker = workerTask();
        long switches = switches(worker);
        long start = System.nanoTime();
        burst(task, batches, perBatch, gapMs);
        double seconds = (System.nanoTime() - start) / 1e9;
        long woke = switches(worker) - switches;
        System.out.printf("worker wake-ups per second %.1f%n", woke / seconds);
    }

    private static void burst(Runnable task, int batches, int perBatch, long gapMs)
            throws InterruptedException {
        Thread[] threads = new Thread[perBatch];
        for (int b = 0; b < batches; b++) {
            for (int i = 0; i < perBatch; i++) {
                threads[i] = new Thread(task);
                threads[i].start();
            }
            for (Thread t : threads) {
                t.join();
            }
            Thread.sleep(gapMs);
        }
    }

    /** The agent's worker thread in {@code /proc/self/task}. */
    private static Path workerTask() throws IOException {
        try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path t : (Iterable<Path>) tasks::iterator) {
                if (Files.readString(t.resolve("comm")).strip().equals("jfrctx-worker")) {
                    return t;
                }
            }
        }
        throw new IllegalStateException("no jfrctx-worker thread");
    }

    private static long switches(Path task) throws IOException {
        for (String line : Files.readAllLines(task.resolve("status"))) {
            if (line.startsWith("voluntary_ctxt_switches:")) {
                return Long.parseLong(line.substring(line.indexOf(':') + 1).strip());
            }
        }
        throw new IllegalStateException("no voluntary_ctxt_switches in " + task);
    }
}
