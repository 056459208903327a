package dev.jfrctx.agent;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * The log {@link Definitions} writes into: any number of writers, one reader (the stream at each
 * delivery). Records live in large shared byte arrays ("chunks", {@link #CHUNK} bytes), already in
 * the batch's wire form, so a definition allocates nothing and the stream copies bytes that lie
 * one after the other (bench/README §10: a small node and array per map kept alive until the next
 * delivery cost young-GC copying and a cache miss each at delivery).
 *
 * <p>A record: 4 bytes for its header, then the record's bytes, padded to 4 bytes. The header (its
 * length in bytes, header included; 0 while being written) sits in a parallel {@code int} array at
 * the record's offset / 4: JDK 22 and later refuse acquire and release access to a {@code byte[]}
 * viewed as ints. A writer reserves its place with one {@code getAndAdd} on the chunk, writes the
 * bytes, then publishes the header with a release store ({@link #commit}); the reader reads the
 * header with an acquire load and then the bytes. A record
 * whose first byte is 0 (or that has no bytes) is skipped: the padding that closes a full chunk,
 * or a record its writer abandoned. A writer whose reservation does not fit closes the chunk with
 * that padding (only the one whose reservation straddles the end does), links the next chunk and
 * retries there ({@link #overflow}).
 *
 * <p>Nothing a delivered sample needs can be missing: a writer commits before its id is returned,
 * hence before the id is installed and before any sample carrying it is taken. A record still being
 * written at delivery time was therefore not installed yet; the reader waits for it briefly (a
 * writer is never blocked between reservation and commit, only descheduled) because records behind
 * it may be needed, and if it is still open after {@link #WAIT_NANOS} stops there and resumes at the
 * next delivery (the samples of this batch whose map lies behind it would be unknown, never wrong;
 * counted in {@link #stalls}). Not API.
 */
final class DefinitionLog {
    private DefinitionLog() {}

    /**
     * 512 KiB (and as much again for its headers): humongous for G1's regions of up to 1 MiB, so
     * never copied by a young GC; copied at most once or twice in larger regions, once a second.
     */
    static final int CHUNK = 1 << 19;

    /** How long the reader waits for a record that is being written. */
    static final long WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    private static final VarHandle HEADERS = MethodHandles.arrayElementVarHandle(int[].class);

    /** Shared storage for records; reserved by {@link #reserved}, linked by {@link #next}. */
    static final class Chunk {
        final byte[] data;
        /** The header of the record at offset {@code p} is {@code headers[p / 4]}. */
        final int[] headers;
        /** Bytes handed out; beyond {@code data.length} once a writer found the chunk full. */
        final AtomicInteger reserved = new AtomicInteger();
        final AtomicReference<Chunk> next = new AtomicReference<>();

        Chunk(int size) {
            data = new byte[size];
            headers = new int[size / 4];
        }
    }

    /** An empty chunk to start from: the first writer links the first real one. */
    private static final AtomicReference<Chunk> CURRENT = new AtomicReference<>(new Chunk(0));

    // The reader's position; only touched under the class lock (one reader at a time).
    private static Chunk readChunk = CURRENT.get();
    private static int readPos;
    private static long stalls;

    /** Where records are written now. */
    static Chunk current() {
        return CURRENT.get();
    }

    /** The space a record of {@code length} bytes (header included) takes. */
    static int aligned(int length) {
        return (length + 3) & ~3;
    }

    /** Publishes the record at {@code at}: its bytes become visible to the reader with it. */
    static void commit(Chunk chunk, int at, int length) {
        HEADERS.setRelease(chunk.headers, at >> 2, length);
    }

    /**
     * The reservation {@code [at, at + size)} of {@code chunk} did not fit: closes the chunk (when
     * the reservation straddles its end) and makes the next chunk current. The caller retries.
     */
    static void overflow(Chunk chunk, int at, int size) {
        int end = chunk.data.length;
        if (at < end) {
            commit(chunk, at, end - at); // padding: its first byte is 0 (or it has none)
        }
        Chunk next = chunk.next.get();
        if (next == null) {
            Chunk fresh = new Chunk(Math.max(CHUNK, size));
            next = chunk.next.compareAndSet(null, fresh) ? fresh : chunk.next.get();
        }
        CURRENT.compareAndSet(chunk, next);
    }

    /** Receives the bytes of each record, in log order. */
    interface Sink {
        void put(byte[] data, int offset, int length);
    }

    /**
     * Hands every committed record to {@code sink} in the order reserved and forgets it; links the
     * next chunk ahead of time when the current one is half full, so that writers seldom allocate
     * one. Called by one thread at a time (the stream, at each delivery).
     */
    static synchronized void drain(Sink sink) {
        Chunk c = readChunk;
        int p = readPos;
        try {
            while (true) {
                byte[] d = c.data;
                int limit = Math.min(c.reserved.get(), d.length);
                while (p < limit) {
                    int h = (int) HEADERS.getAcquire(c.headers, p >> 2);
                    if (h == 0 && (h = await(c.headers, p >> 2)) == 0) {
                        stalls++;
                        return;
                    }
                    if (h > 4 && d[p + 4] != 0) {
                        sink.put(d, p + 4, h - 4);
                    }
                    p += aligned(h);
                }
                Chunk next = c.next.get();
                if (p < d.length || next == null) {
                    return;
                }
                c = next;
                p = 0;
            }
        } finally {
            readChunk = c;
            readPos = p;
            prepareNext();
        }
    }

    /** The header {@code i} once its writer committed it, or 0 after {@link #WAIT_NANOS}. */
    private static int await(int[] headers, int i) {
        long start = System.nanoTime();
        for (int spins = 0; ; spins++) {
            int h = (int) HEADERS.getAcquire(headers, i);
            if (h != 0) {
                return h;
            }
            long waited = System.nanoTime() - start;
            if (waited > WAIT_NANOS) {
                return 0;
            }
            if (spins < 100) {
                Thread.onSpinWait();
            } else if (waited < 1_000_000) {
                Thread.yield();
            } else {
                LockSupport.parkNanos(100_000);
            }
        }
    }

    private static void prepareNext() {
        Chunk cur = CURRENT.get();
        if (cur.data.length > 0 && cur.next.get() == null && cur.reserved.get() >= cur.data.length / 2) {
            cur.next.compareAndSet(null, new Chunk(CHUNK));
        }
    }

    /** How often a delivery stopped at a record still being written after {@link #WAIT_NANOS}. */
    static synchronized long stalls() {
        return stalls;
    }

    /** Drops every record and chunk: nothing reads the log any more. */
    static synchronized void clear() {
        Chunk empty = new Chunk(0);
        CURRENT.set(empty);
        readChunk = empty;
        readPos = 0;
    }
}
