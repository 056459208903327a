import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * Fresh virtual threads at a steady rate, as a thread-per-request server starts them: each either
 * activates a snapshot once and closes it ({@code context}) or does nothing ({@code nothing}).
 * {@code run.py} reads the CPU time of each thread group from /proc when it is done.
 *
 * <p>Usage: {@code java FreshThreads SECONDS context|nothing THREADS_PER_SECOND}. With
 * {@code -Dwarmup=S}, first runs S seconds the same way and prints {@code warm}, then waits
 * {@code -Dhold=MS} (so that the CPU can be read) before the measured SECONDS. Prints
 * {@code threads N} (threads started in the measured seconds) at the end, then waits for
 * {@code -Dhold=MS} again.
 * JDK 21+; compiled with {@code --release 17} (the virtual-thread start goes through a handle).
 */
public final class FreshThreads {
    private static final MethodHandle START_VIRTUAL;

    static {
        try {
            START_VIRTUAL = MethodHandles.publicLookup().findStatic(Thread.class, "startVirtualThread",
                    MethodType.methodType(Thread.class, Runnable.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError("JDK 21 or later is needed: " + e);
        }
    }

    private FreshThreads() {
    }

    public static void main(String[] args) throws Throwable {
        long seconds = Long.parseLong(args[0]);
        boolean context = args[1].equals("context");
        long rate = Long.parseLong(args[2]);
        RecordingContext.Snapshot snapshot;
        try (RecordingContext c = RecordingContext.where(RecordingContextKey.forName("endpoint"), "/x").build()) {
            snapshot = RecordingContext.snapshot();
        }
        Runnable task = context ? () -> {
            try (RecordingContext.Activation a = snapshot.activate()) {
                // the first context of a fresh thread
            }
        } : () -> { };
        long warmup = Long.getLong("warmup", 0);
        if (warmup > 0) {
            run(task, warmup, rate);
            System.out.println("warm");
            System.out.flush();
            Thread.sleep(Long.getLong("hold", 3000));
        }
        long n = run(task, seconds, rate);
        System.out.println("threads " + n);
        System.out.flush();
        Thread.sleep(Long.getLong("hold", 3000));
    }

    /** Starts {@code rate} threads a second running {@code task} for {@code seconds}: how many. */
    private static long run(Runnable task, long seconds, long rate) throws Throwable {
        Thread[] batch = new Thread[64];
        long start = System.nanoTime();
        long end = start + seconds * 1_000_000_000L;
        long n = 0;
        while (System.nanoTime() < end) {
            long wait = start + n * 1_000_000_000L / rate - System.nanoTime();
            if (wait > 0) {
                Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
            }
            for (int i = 0; i < batch.length; i++) {
                batch[i] = (Thread) START_VIRTUAL.invokeExact(task);
            }
            for (Thread t : batch) {
                t.join();
            }
            n += batch.length;
        }
        return n;
    }
}
