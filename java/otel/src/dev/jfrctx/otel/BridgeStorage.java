package dev.jfrctx.otel;

import dev.jfrctx.RecordingContext;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.ContextStorage;
import io.opentelemetry.context.Scope;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The {@link ContextStorage} wrapper: every {@link #attach} of a Context holding a local span
 * installs that span's jfrctx context ({@code trace_id}, {@code span_id}, the local root's chosen
 * attributes) on the thread, extending whatever jfrctx context the thread had (the application's
 * own entries stay), and the returned scope's {@code close} restores exactly the previous one.
 * Contexts without such a span (the root context, baggage only, a remote parent), and spans with
 * nothing to record yet ({@link SpanIds#NONE} before any root attribute is known), leave the
 * thread's jfrctx context as it is: the delegate's scope is returned unwrapped.
 *
 * <p>Per attach of a span already attached before on a thread with the same base context: one
 * map lookup, the facade's cached build (no call into the agent) and one small scope object.
 */
final class BridgeStorage implements ContextStorage {

    /** Scopes whose jfrctx close the facade refused (closed out of order or on another thread). */
    static final AtomicLong MISUSED = new AtomicLong();
    /** Attaches whose jfrctx build failed (too many entries with the application's own). */
    static final AtomicLong FAILED = new AtomicLong();

    private final ContextStorage delegate;
    private final SpanEntries entries;

    BridgeStorage(ContextStorage delegate, SpanEntries entries) {
        this.delegate = delegate;
        this.entries = entries;
    }

    @Override
    public Scope attach(Context toAttach) {
        Scope inner = delegate.attach(toAttach);
        if (inner == Scope.noop()) {
            return inner; // already current: nothing changes on the thread
        }
        RecordingContext installed = null;
        try {
            SpanEntry e = entries.of(toAttach);
            RecordingContext.Builder b = e == null ? null : e.builder();
            if (b == null) {
                return inner;
            }
            installed = b.build();
            return new BridgeScope(inner, installed);
        } catch (RuntimeException ex) {
            failed(ex);
            return inner;
        } catch (Error err) {
            // A StackOverflowError (the attach came at the end of a deep stack): the caller never
            // gets a scope to close, so this attach must not have happened, here or in OTel.
            try {
                if (installed != null) {
                    installed.close();
                }
            } finally {
                inner.close();
            }
            throw err;
        }
    }

    @Override
    public Context current() {
        return delegate.current();
    }

    @Override
    public Context root() {
        return delegate.root();
    }

    private static void failed(RuntimeException ex) {
        if (FAILED.getAndIncrement() == 0) {
            System.err.println("jfrctx-otel: a span's context could not be installed (" + ex.getMessage()
                    + "); its samples keep the thread's context. Said once.");
        }
    }

    /** Closes the jfrctx context, then the delegate's scope (the reverse of opening). */
    private static final class BridgeScope implements Scope {
        private final Scope inner;
        private final RecordingContext installed;

        BridgeScope(Scope inner, RecordingContext installed) {
            this.inner = inner;
            this.installed = installed;
        }

        @Override
        public void close() {
            try {
                installed.close();
            } catch (IllegalStateException ex) {
                if (MISUSED.getAndIncrement() == 0) {
                    System.err.println("jfrctx-otel: an OpenTelemetry Scope was closed out of order or on"
                            + " another thread (" + ex.getMessage() + "); the thread keeps the jfrctx"
                            + " context until the scopes opened after it are closed. Said once.");
                }
            } finally {
                inner.close();
            }
        }
    }
}
