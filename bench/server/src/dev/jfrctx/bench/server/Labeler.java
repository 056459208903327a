package dev.jfrctx.bench.server;

/** Labels through another profiler (Pyroscope's agent); the implementation is loaded by name. */
public interface Labeler {
    /** The label set for this request ({@code request} null: the endpoint alone). */
    Object labels(String endpoint, String request);

    /** Installs {@code labels} on the calling thread until the result is closed. */
    AutoCloseable open(Object labels);

    /** Whether the profiler's labels are live (its agent started). */
    boolean enabled();

    /** Pyroscope's implementation ({@code bench/server/pyroscope/}). */
    static Labeler pyroscope() {
        return Holder.PYROSCOPE;
    }

    /** Lazy holder: loaded only when a Pyroscope configuration runs. */
    final class Holder {
        private Holder() {}

        static final Labeler PYROSCOPE = load("dev.jfrctx.bench.server.PyroscopeLabeler");

        private static Labeler load(String name) {
            try {
                return (Labeler) Class.forName(name).getDeclaredConstructor().newInstance();
            } catch (ReflectiveOperationException | LinkageError e) {
                throw new IllegalStateException("cannot load " + name + " (Pyroscope agent jar missing?): " + e, e);
            }
        }
    }
}
