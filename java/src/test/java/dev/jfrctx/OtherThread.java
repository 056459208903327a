package dev.jfrctx;

import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicReference;

/** Runs a piece of a test on a fresh named thread and hands back its result or failure. */
final class OtherThread {

    private OtherThread() {
    }

    static <T> T call(String name, Callable<T> body) throws Exception {
        AtomicReference<T> result = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread thread = new Thread(() -> {
            try {
                result.set(body.call());
            } catch (Throwable t) {
                failure.set(t);
            }
        }, name);
        thread.start();
        thread.join(10_000);
        if (thread.isAlive()) {
            throw new AssertionError("thread " + name + " did not finish");
        }
        Throwable t = failure.get();
        if (t instanceof Exception) {
            throw (Exception) t;
        }
        if (t instanceof Error) {
            throw (Error) t;
        }
        return result.get();
    }
}
