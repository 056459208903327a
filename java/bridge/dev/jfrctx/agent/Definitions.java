package dev.jfrctx.agent;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Context maps numbered by the facade itself, with no JNI call on the application's thread: the
 * facade takes an id here and installs it on its ring at once; the stream bridge hands the map to
 * the agent in the next batch it delivers ({@code drain}). One class in the boot loader for
 * every copy of the facade (each class loader's copy finds this one), so ids are unique per JVM.
 *
 * <p>Why the map always reaches the agent in time: a sample can only carry a context that was
 * installed before it was taken, and the map was pushed here before it was installed; every batch
 * is delivered after the samples in it were taken, and each delivery first drains what is here.
 * So the map arrives in the same batch as the first sample that needs it, or earlier.
 *
 * <p>The map is encoded here, on the thread that built it (its strings are in that thread's
 * cache), into the batch's wire form: the stream then copies one array per map instead of
 * reading every key and value object of another thread's map (bench/README §10).
 *
 * <p>A lock-free stack (one CAS per map, per release); drained in push order. After the stream
 * has ended nobody drains it: {@link #close} makes later maps cost nothing and get an id the
 * agent never learns (their samples, if any, would be unknown). Not API.
 */
public final class Definitions {
    private Definitions() {}

    /** The first id handed out; the agent's own ids ({@code Natives.intern}) stay below. */
    public static final long FIRST_ID = 1L << 62;

    /** Returned by {@link #define} once closed. */
    static final long UNDEFINED = FIRST_ID - 1;

    private static final AtomicLong NEXT = new AtomicLong(FIRST_ID);

    /** A definition ({@code wire != null}) or a release ({@code wire == null}) of {@code id}. */
    static final class Node {
        final long id;
        /** The map in the batch's wire form ({@link #encode}). */
        final byte[] wire;
        Node next;

        Node(long id, byte[] wire) {
            this.id = id;
            this.wire = wire;
        }
    }

    private static final AtomicReference<Node> TOP = new AtomicReference<>();

    private static volatile boolean closed;

    /**
     * Numbers a new context map and queues it for the agent.
     *
     * @param kv {@code [k0, v0, k1, v1, ...]} sorted by key, unique keys; not modified afterwards
     * @return its id, at least {@link #FIRST_ID}
     */
    public static long define(String[] kv) {
        if (closed) {
            return UNDEFINED;
        }
        byte[] wire = encode(kv);
        long id = NEXT.getAndIncrement();
        push(new Node(id, wire));
        return id;
    }

    /**
     * The wire form of a map (ARCHITECTURE.md, "Batch format", tag 5): entry count (u16), then
     * for each key and each value its UTF-8 length (u32) and bytes, little-endian. One array,
     * written char by char while every char is ASCII (keys and most values), else by
     * {@link #encodeUtf8}.
     */
    static byte[] encode(String[] kv) {
        int size = 2 + 4 * kv.length;
        for (String s : kv) {
            size += s.length();
        }
        byte[] out = new byte[size];
        int pairs = kv.length / 2;
        out[0] = (byte) pairs;
        out[1] = (byte) (pairs >>> 8);
        int p = 2;
        for (String s : kv) {
            int len = s.length();
            putInt(out, p, len);
            p += 4;
            for (int i = 0; i < len; i++) {
                char c = s.charAt(i);
                if (c >= 0x80) {
                    return encodeUtf8(kv);
                }
                out[p++] = (byte) c;
            }
        }
        return out;
    }

    /** {@link #encode} for maps with a non-ASCII char. */
    static byte[] encodeUtf8(String[] kv) {
        byte[][] texts = new byte[kv.length][];
        int size = 2 + 4 * kv.length;
        for (int i = 0; i < kv.length; i++) {
            texts[i] = kv[i].getBytes(StandardCharsets.UTF_8);
            size += texts[i].length;
        }
        byte[] out = new byte[size];
        int pairs = kv.length / 2;
        out[0] = (byte) pairs;
        out[1] = (byte) (pairs >>> 8);
        int p = 2;
        for (byte[] t : texts) {
            putInt(out, p, t.length);
            System.arraycopy(t, 0, out, p + 4, t.length);
            p += 4 + t.length;
        }
        return out;
    }

    private static void putInt(byte[] out, int at, int v) {
        out[at] = (byte) v;
        out[at + 1] = (byte) (v >>> 8);
        out[at + 2] = (byte) (v >>> 16);
        out[at + 3] = (byte) (v >>> 24);
    }

    /**
     * Queues the release of {@code id}: the facade object holding it is gone.
     *
     * @param id an id from {@link #define}
     */
    public static void release(long id) {
        if (!closed && id >= FIRST_ID) {
            push(new Node(id, null));
        }
    }

    private static void push(Node node) {
        Node seen;
        do {
            seen = TOP.get();
            node.next = seen;
        } while (!TOP.compareAndSet(seen, node));
    }

    /**
     * Takes every queued definition and release, oldest first.
     *
     * @return the first node of the chain (linked by {@code next}), or null when none
     */
    static Node drain() {
        if (TOP.get() == null) {
            return null;
        }
        Node n = TOP.getAndSet(null);
        Node reversed = null;
        while (n != null) {
            Node next = n.next;
            n.next = reversed;
            reversed = n;
            n = next;
        }
        return reversed;
    }

    /** Nothing will drain the queue any more (the stream ended): stop queueing. */
    static void close() {
        closed = true;
        TOP.set(null);
    }
}
