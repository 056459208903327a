package dev.jfrctx.bench.server;

import io.pyroscope.labels.v2.LabelsSet;
import io.pyroscope.labels.v2.ScopedContext;

/**
 * Pyroscope's Java agent labels ({@code io.pyroscope:agent} 2.x, {@code labels.v2}): a
 * {@code ScopedContext} per request, as its documentation shows for per-request labels.
 * Compiled only when the agent jar is present (it is the class path at run time too: the agent
 * is a {@code -javaagent} jar).
 */
public final class PyroscopeLabeler implements Labeler {
    @Override
    public Object labels(String endpoint, String request) {
        return request == null
                ? new LabelsSet("endpoint", endpoint)
                : new LabelsSet("endpoint", endpoint, "request", request);
    }

    @Override
    public AutoCloseable open(Object labels) {
        return new ScopedContext((LabelsSet) labels);
    }

    @Override
    public boolean enabled() {
        return ScopedContext.ENABLED.get();
    }
}
