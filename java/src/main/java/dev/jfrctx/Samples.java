package dev.jfrctx;

import dev.jfrctx.internal.AgentLink;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * In-process listeners: the agent's contextualised samples, delivered inside the JVM.
 *
 * <pre>{@code
 * Consumer<ContextualSample> l = s -> { if (s.context() != null) count(s.context().get("endpoint")); };
 * Samples.addListener(l);
 * ...
 * Samples.removeListener(l);
 * }</pre>
 *
 * <p>Delivery:
 * <ul>
 * <li>Listeners get the samples that pass the {@link RecordingContextFilter}, the same ones the
 *     sinks get, about a second after they were taken (when the agent decides them), from the
 *     moment the first listener is added. While no listener is registered the agent does not even
 *     encode samples for them.</li>
 * <li>Calls happen on one dedicated daemon thread, {@code jfrctx-listeners}, never on an
 *     application thread: batch by batch, in the agent's order, each sample to every listener in
 *     registration order. The thread is created by the facade without inheriting the creating
 *     thread's inheritable thread locals, and with no context class loader; it never has a
 *     {@link RecordingContext} installed by jfrctx (a listener that opens one must close it). No
 *     security manager context is applied (none exists on 17+ in practice).</li>
 * <li>A listener that throws is reported once on {@code System.err} and keeps receiving.</li>
 * <li>Samples taken on {@code jfrctx-listeners} itself are never delivered to listeners (they still
 *     reach the sinks), so a listener that burns CPU or installs contexts cannot feed itself.</li>
 * <li>If listeners fall behind by more than 64 MiB of encoded samples, the agent drops new batches
 *     (counted in the exit summary as {@code listener records=N errors=DROPPED}). Samples decided
 *     in the agent's last round at JVM exit may not be delivered.</li>
 * <li>Without the agent, listeners are registered but never called.</li>
 * </ul>
 */
public final class Samples {

    private static final long POLL_MILLIS = 200;

    private static final CopyOnWriteArrayList<Entry> LISTENERS = new CopyOnWriteArrayList<>();
    private static final Object LOCK = new Object();
    private static Thread dispatcher;

    private Samples() {
    }

    private static final class Entry {
        final Consumer<ContextualSample> listener;
        boolean reported;

        Entry(Consumer<ContextualSample> listener) {
            this.listener = listener;
        }
    }

    /**
     * Registers {@code listener}; a listener already registered is not added again.
     *
     * @param listener the listener
     */
    public static void addListener(Consumer<ContextualSample> listener) {
        Checks.notNull(listener, "listener");
        synchronized (LOCK) {
            for (Entry e : LISTENERS) {
                if (e.listener == listener) {
                    return;
                }
            }
            LISTENERS.add(new Entry(listener));
            if (LISTENERS.size() == 1 && AgentLink.canListen()) {
                if (dispatcher == null) {
                    Thread t = new Thread(null, Samples::dispatch, "jfrctx-listeners", 0, false);
                    t.setDaemon(true);
                    t.setContextClassLoader(null);
                    dispatcher = t;
                    t.start();
                }
                AgentLink.setListening(true, dispatcher.getId());
                LOCK.notifyAll();
            }
        }
    }

    /**
     * Unregisters {@code listener}.
     *
     * @param listener the listener
     * @return whether it was registered
     */
    public static boolean removeListener(Consumer<ContextualSample> listener) {
        synchronized (LOCK) {
            for (Entry e : LISTENERS) {
                if (e.listener == listener) {
                    LISTENERS.remove(e);
                    if (LISTENERS.isEmpty()) {
                        AgentLink.setListening(false, -1);
                    }
                    return true;
                }
            }
            return false;
        }
    }

    private static void dispatch() {
        while (true) {
            try {
                synchronized (LOCK) {
                    while (LISTENERS.isEmpty()) {
                        LOCK.wait();
                    }
                }
                byte[] batch = AgentLink.pollSamples(POLL_MILLIS);
                if (batch != null) {
                    deliver(decode(batch));
                }
            } catch (InterruptedException stop) {
                return;
            } catch (Throwable t) {
                System.err.println("jfrctx: error: listener delivery stopped: " + t);
                return;
            }
        }
    }

    private static void deliver(List<ContextualSample> samples) {
        for (ContextualSample s : samples) {
            for (Entry e : LISTENERS) {
                try {
                    e.listener.accept(s);
                } catch (Throwable t) {
                    if (!e.reported) {
                        e.reported = true;
                        System.err.println("jfrctx: warning: listener " + e.listener + " threw " + t
                                + "; it keeps receiving samples (further exceptions from it are not"
                                + " reported)");
                    }
                }
            }
        }
    }

    /** Decodes one listener batch (format in ARCHITECTURE.md, "Listener batch format"). */
    static List<ContextualSample> decode(byte[] bytes) {
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        List<String> strings = new ArrayList<>();
        List<ContextualSample> out = new ArrayList<>();
        try {
            while (b.hasRemaining()) {
                byte tag = b.get();
                if (tag == 1) {
                    int id = b.getInt();
                    byte[] s = new byte[b.getInt()];
                    b.get(s);
                    if (id != strings.size()) {
                        throw new IllegalStateException("string id " + id + " out of order");
                    }
                    strings.add(new String(s, StandardCharsets.UTF_8));
                } else if (tag == 2) {
                    String event = strings.get(b.getInt());
                    long time = b.getLong();
                    long tid = b.getLong();
                    String threadName = strings.get(b.getInt());
                    boolean virtual = (b.get() & 1) != 0;
                    Map<String, String> context = null;
                    String reason = null;
                    if (b.get() == 0) {
                        int n = b.getShort() & 0xffff;
                        TreeMap<String, String> m = new TreeMap<>();
                        for (int i = 0; i < n; i++) {
                            String k = strings.get(b.getInt());
                            m.put(k, strings.get(b.getInt()));
                        }
                        context = Collections.unmodifiableMap(m);
                    } else {
                        reason = strings.get(b.getInt());
                    }
                    int n = b.getShort() & 0xffff;
                    List<ContextualSample.Frame> frames = new ArrayList<>(n);
                    for (int i = 0; i < n; i++) {
                        String m = strings.get(b.getInt());
                        frames.add(new ContextualSample.Frame(m, b.getInt()));
                    }
                    out.add(new ContextualSample(event, time, tid, threadName, virtual, context,
                            reason, Collections.unmodifiableList(frames)));
                } else {
                    throw new IllegalStateException("unknown record tag " + tag);
                }
            }
        } catch (BufferUnderflowException | IndexOutOfBoundsException e) {
            throw new IllegalStateException("truncated or corrupt listener batch", e);
        }
        return out;
    }
}
