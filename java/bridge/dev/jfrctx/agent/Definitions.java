package dev.jfrctx.agent;

import java.nio.charset.StandardCharsets;

/**
 * Context maps numbered by the facade itself, with no JNI call on the application's thread: the
 * facade takes an id here and installs it on its ring at once; the stream bridge hands the map to
 * the agent in the next batch it delivers ({@link #drain}). One class in the boot loader for
 * every copy of the facade (each class loader's copy finds this one), so ids are unique per JVM.
 *
 * <p>Why the map always reaches the agent in time: a sample can only carry a context that was
 * installed before it was taken, and the map was written here before it was installed; every batch
 * is delivered after the samples in it were taken, and each delivery first drains what is here.
 * So the map arrives in the same batch as the first sample that needs it, or earlier.
 *
 * <p>The map is written by the thread that built it (its strings are in that thread's cache)
 * straight into a shared {@link DefinitionLog} chunk, in the batch's wire form: no object per map,
 * and the stream copies bytes that lie one after the other (bench/README §10).
 *
 * <p>After the stream has ended nobody drains the log: {@link #close} makes later maps cost
 * nothing and get an id the agent never learns (their samples, if any, would be unknown). Not API.
 */
public final class Definitions {
    private Definitions() {}

    /** The first id handed out; the agent's own ids ({@code Natives.intern}) stay below. */
    public static final long FIRST_ID = 1L << 62;

    /** Returned by {@link #define} once closed. */
    static final long UNDEFINED = FIRST_ID - 1;

    private static volatile boolean closed;

    static {
        // A class is initialized, and a call site linked, by the first thread to need it; on a
        // thread at the end of its stack that fails with StackOverflowError, and a class whose
        // initialization failed stays unusable for the JVM's life (NoClassDefFoundError on every
        // thread: every later map with a non-ASCII char, every record). So what define and
        // release run for the first time is run here, where StreamBridge.start initializes this
        // class before the application runs: the log and its release store, and the UTF-8
        // encoding of Latin-1 and UTF-16 strings (java.lang.StringUTF16 and the encoders).
        DefinitionLog.warm();
        encodeUtf8(new String[] {"\u00df", "\u4e2d"});
    }

    /** Initializes this class (its static initializer above) and does nothing else. */
    static void initialize() {
        // The call is the point: the JVM runs the static initializer before it.
    }

    /**
     * Numbers a new context map and logs it for the agent.
     *
     * @param kv {@code [k0, v0, k1, v1, ...]} sorted by key, unique keys; not modified afterwards
     * @return its id, at least {@link #FIRST_ID}
     */
    public static long define(String[] kv) {
        if (closed) {
            return UNDEFINED;
        }
        int ascii = 2 + 4 * kv.length;
        for (String s : kv) {
            ascii += s.length();
        }
        long id = write(BatchEncoder.TAG_DEFINE, NEW_ID, kv, ascii, null);
        if (id < 0) {
            id = -id;
            write(BatchEncoder.TAG_DEFINE, id, null, 0, encodeUtf8(kv));
        }
        return id;
    }

    /** {@link #write}'s {@code id} for a definition numbered by its own reservation. */
    private static final long NEW_ID = 0;

    /**
     * Logs a record: {@code tag}, {@code id} (i64), then either the map {@code kv} in the wire
     * form of a definition (ARCHITECTURE.md, "Batch format", tag 5: entry count u16, then for each
     * key and each value its UTF-8 length u32 and bytes, little-endian), written char by char as
     * {@code asciiLength} bytes, or {@code body} when not null.
     *
     * @param id the record's id, or {@link #NEW_ID}: the id the reservation hands out
     *     ({@code DefinitionLog}: one atomic add reserves the bytes and numbers the map)
     * @return the id written; negated, having logged nothing the reader keeps, when a char of
     *     {@code kv} is not ASCII (the id stays the map's: its reservation fitted)
     */
    private static long write(byte tag, long id, String[] kv, int asciiLength, byte[] body) {
        int length = 4 + 1 + 8 + (kv != null ? asciiLength : body != null ? body.length : 0);
        int size = DefinitionLog.aligned(length);
        long numbered = id == NEW_ID ? DefinitionLog.ID : 0;
        while (true) {
            DefinitionLog.Chunk c = DefinitionLog.current();
            long reservation = DefinitionLog.reserve(c, size, numbered);
            long offset = DefinitionLog.offset(reservation);
            byte[] d = c.data;
            try {
                if (offset > d.length - size) {
                    DefinitionLog.overflow(c, reservation, size);
                    continue;
                }
                int at = (int) offset;
                long written = id == NEW_ID ? c.id(reservation) : id;
                d[at + 4] = tag;
                putLong(d, at + 5, written);
                if (kv != null && !putAscii(d, at + 13, kv)) {
                    DefinitionLog.commit(c, at, -length); // skipped by the reader
                    return -written;
                }
                if (body != null) {
                    System.arraycopy(body, 0, d, at + 13, body.length);
                }
                DefinitionLog.commit(c, at, length);
                return written;
            } catch (Throwable t) {
                // A StackOverflowError can strike at any call, an OutOfMemoryError in overflow:
                // close the reservation, or the reader would keep it pending for ever. A plain
                // store and no call, so that the error cannot strike again first; the reader sees
                // it at a delivery soon after.
                if (offset < d.length) {
                    c.headers[(int) offset >> DefinitionLog.SHIFT] =
                            offset > d.length - size ? (int) (offset - d.length) : -length;
                }
                throw t;
            }
        }
    }

    /** Writes {@code kv}'s wire form at {@code p}; false at the first char that is not ASCII. */
    private static boolean putAscii(byte[] d, int p, String[] kv) {
        int pairs = kv.length / 2;
        d[p] = (byte) pairs;
        d[p + 1] = (byte) (pairs >>> 8);
        p += 2;
        for (String s : kv) {
            int len = s.length();
            putInt(d, p, len);
            p += 4;
            for (int i = 0; i < len; i++) {
                char ch = s.charAt(i);
                if (ch >= 0x80) {
                    return false;
                }
                d[p++] = (byte) ch;
            }
        }
        return true;
    }

    /** The wire form of a map with a non-ASCII char (tag 5 without its id). */
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

    private static void putLong(byte[] out, int at, long v) {
        putInt(out, at, (int) v);
        putInt(out, at + 4, (int) (v >>> 32));
    }

    /**
     * Logs the release of {@code id}: the facade object holding it is gone.
     *
     * @param id an id from {@link #define}
     */
    public static void release(long id) {
        if (!closed && id >= FIRST_ID) {
            write(BatchEncoder.TAG_RELEASE, id, null, 0, null);
        }
    }

    /** Hands every logged definition and release to {@code sink}, oldest first (records 5, 6). */
    static void drain(DefinitionLog.Sink sink) {
        DefinitionLog.drain(sink);
    }

    /** Nothing will drain the log any more (the stream ended): stop logging. */
    static void close() {
        closed = true;
        DefinitionLog.clear();
    }
}
