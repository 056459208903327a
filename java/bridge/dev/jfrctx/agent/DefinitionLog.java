package dev.jfrctx.agent;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The log {@link Definitions} writes into: any number of writers, one reader (the stream at each
 * delivery). Records live in large shared byte arrays ("chunks", {@link #CHUNK} bytes), already in
 * the batch's wire form, so a definition allocates nothing and the stream copies bytes that lie
 * one after the other (bench/README §10: a small node and array per map kept alive until the next
 * delivery cost young-GC copying and a cache miss each at delivery).
 *
 * <p>A record: 4 bytes for its header, then the record's bytes, padded to 16 bytes. The header
 * (its length in bytes, header included; 0 while being written; negative when the reader is to
 * skip it) sits in a parallel {@code int} array at the record's offset / 16 (a quarter of the
 * chunk's size; a release, the smallest record, takes 13 bytes): JDK 22 and later refuse
 * acquire and release access to a {@code byte[]} viewed as ints. A writer reserves its place with
 * one {@code getAndAdd} on the chunk ({@link #reserve}), writes the bytes, then publishes the
 * header with a release store ({@link #commit}); the reader reads the header with an acquire load
 * and then the bytes. A writer whose reservation does not fit closes the chunk with a skipped
 * record (only the one whose reservation straddles the end does), links the next chunk and
 * retries there ({@link #overflow}). Also skipped: a map written again because a char was not
 * ASCII, and a reservation whose writer failed before committing it (a {@code StackOverflowError}
 * can strike at any call), which the writer's handler closes with a plain store.
 *
 * <p>The same {@code getAndAdd} numbers a definition: the chunk's reservation word counts ids
 * (high bits) beside bytes (low bits), and a definition's id is the chunk's first id plus the
 * count it reserved at. So defining a map writes one line every writer shares (the chunk's own
 * object), not two (bench/README §7, "Definitions in one atomic add"). Ids stay dense, as the
 * agent's window of defined ids expects ({@code agent/core/context/ids.rs}): a chunk's ids
 * follow the last one used in the chunk before it, and the only ids never used are those of
 * reservations that did not fit a full chunk (a few per chunk) or whose writer failed.
 *
 * <p>Nothing a delivered sample needs can be missing: a writer commits before its id is returned,
 * hence before the id is installed and before any sample carrying it is taken. A record still
 * being written when the reader reaches it was therefore not installed yet, but records behind it
 * may be; the reader passes over it and hands it over once committed ({@link #drain}), so a
 * descheduled writer delays nobody else's maps. Not API.
 */
final class DefinitionLog {
    private DefinitionLog() {}

    /**
     * 512 KiB: humongous for G1's regions of up to 1 MiB, so never copied by a young GC (its
     * 128 KiB of headers may be, once or twice); in larger regions copied at most a few times, and
     * one chunk lasts a second or more at thousands of maps a second.
     */
    static final int CHUNK = 1 << 19;

    private static final VarHandle HEADERS = MethodHandles.arrayElementVarHandle(int[].class);

    /** Shared storage for records; reserved by {@link #reserve}, linked by {@link #next}. */
    static final class Chunk {
        final byte[] data;
        /** The header of the record at offset {@code p} is {@code headers[p >> SHIFT]}. */
        final int[] headers;
        /**
         * Ids handed out (from {@link #ID}) and bytes handed out (below it); the bytes go beyond
         * {@code data.length} once a writer found the chunk full. Written through {@link
         * #RESERVED} only.
         */
        private volatile long reserved;
        /**
         * This chunk's first id, {@link #UNNUMBERED} until the writer that finds the chunk before
         * it full sets it, before making this chunk current ({@link #overflow}).
         */
        private volatile long firstId;
        final AtomicReference<Chunk> next = new AtomicReference<>();

        Chunk(int size, long firstId) {
            data = new byte[size];
            headers = new int[size >> SHIFT];
            this.firstId = firstId;
        }

        /** Bytes handed out so far (possibly beyond {@code data.length}). */
        long bytes() {
            return reserved & BYTES;
        }

        /**
         * The id of a reservation {@link #reserve} returned with an id; given the word itself,
         * the next id this chunk would hand out.
         */
        long id(long reservation) {
            return firstId + (reservation >>> ID_SHIFT);
        }
    }

    /**
     * A reservation word's low bits count bytes: 2^36, far more than a chunk (at most 2 GiB) plus
     * what writers that found it full added once each; its high 28 bits count ids, more than a
     * chunk can hold (a definition takes at least 16 bytes, so at most 2^27 fit in 2 GiB).
     */
    static final int ID_SHIFT = 36;

    /** Adds one id to a reservation ({@link #reserve}). */
    static final long ID = 1L << ID_SHIFT;

    private static final long BYTES = ID - 1;

    /** A chunk linked ahead of time, not numbered yet. */
    private static final long UNNUMBERED = 0;

    private static final VarHandle RESERVED;
    private static final VarHandle FIRST;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            RESERVED = lookup.findVarHandle(Chunk.class, "reserved", long.class);
            FIRST = lookup.findVarHandle(Chunk.class, "firstId", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * Reserves {@code size} bytes of {@code chunk}, and an id with them when {@code id} is
     * {@link #ID} (0: none). Returns the reservation: its offset is {@code reservation & BYTES}
     * ({@link #offset}), its id {@link Chunk#id}; it fits when the offset is at most {@code
     * data.length - size}, else the caller calls {@link #overflow} and retries.
     */
    static long reserve(Chunk chunk, int size, long id) {
        return (long) RESERVED.getAndAdd(chunk, id + size);
    }

    /** A reservation's offset in its chunk's data. */
    static long offset(long reservation) {
        return reservation & BYTES;
    }

    /** An empty chunk to start from: the first writer links the first real one. */
    private static final AtomicReference<Chunk> CURRENT =
            new AtomicReference<>(new Chunk(0, Definitions.FIRST_ID));

    // The reader's position; only touched under the class lock (one reader at a time).
    private static Chunk readChunk = CURRENT.get();
    private static int readPos;

    /** Where records are written now. */
    static Chunk current() {
        return CURRENT.get();
    }

    /** Records start at multiples of {@link #GRAIN} bytes; a header per grain. */
    static final int SHIFT = 4;

    static final int GRAIN = 1 << SHIFT;

    /** The space a record of {@code length} bytes (header included) takes. */
    static int aligned(int length) {
        return (length + GRAIN - 1) & -GRAIN;
    }

    /** Publishes the record at {@code at}: its bytes become visible to the reader with it. */
    static void commit(Chunk chunk, int at, int length) {
        HEADERS.setRelease(chunk.headers, at >> SHIFT, length);
    }

    /**
     * Links what a writer's first record runs (this class's initializer, the reservation's atomic
     * add, the header's release store, and the numbering of the next chunk at an overflow: the
     * first define always overflows the empty chunk the log starts with) on scratch chunks the
     * reader never sees, so that no application thread is the first to: see {@link Definitions}'
     * initializer.
     */
    static void warm() {
        Chunk scratch = new Chunk(GRAIN, UNNUMBERED);
        commit(scratch, (int) offset(reserve(scratch, GRAIN, ID)), 1);
        scratch.next.set(new Chunk(0, UNNUMBERED));
        overflow(scratch, reserve(scratch, GRAIN, ID), GRAIN); // not current: nothing moves
    }

    /**
     * The {@code reservation} of {@code size} bytes of {@code chunk} did not fit: closes the chunk
     * (when the reservation straddles its end) and makes the next chunk current, numbered from
     * this reservation's id count on. The caller retries.
     *
     * <p>Why that numbering repeats no id: offsets and id counts grow together in one word, and
     * a reservation after one that did not fit cannot fit either, so every reservation that fit,
     * hence every id used in this chunk, was counted before this one. Of the writers that find
     * the chunk full the first to set the next chunk's first id wins; each would do.
     */
    static void overflow(Chunk chunk, long reservation, int size) {
        long at = offset(reservation);
        int end = chunk.data.length;
        if (at < end) {
            commit(chunk, (int) at, (int) (at - end)); // padding, skipped
        }
        Chunk next = chunk.next.get();
        if (next == null) {
            Chunk fresh = new Chunk(Math.max(CHUNK, size), UNNUMBERED);
            next = chunk.next.compareAndSet(null, fresh) ? fresh : chunk.next.get();
        }
        FIRST.compareAndSet(next, UNNUMBERED, chunk.id(reservation));
        CURRENT.compareAndSet(chunk, next);
    }

    /** Receives the bytes of each record, in log order. */
    interface Sink {
        void put(byte[] data, int offset, int length);
    }

    /**
     * Hands every committed record to {@code sink} and forgets it; links the next chunk ahead of
     * time when the current one is half full, so that writers seldom allocate one. Called by one
     * thread at a time (the stream, at each delivery).
     *
     * <p>Order: the order reserved, except that a record still being written is passed over
     * (its place kept in the pending ranges) and handed over at the first look after it was
     * committed, before any record read after that look. So a map's release, logged only after
     * its definition was committed, never arrives before it, and no record waits for a slow one.
     */
    static synchronized void drain(Sink sink) {
        Chunk c = readChunk;
        int p = readPos;
        try {
            if (pendingCount > 0) {
                drainPending(sink);
            }
            while (true) {
                byte[] d = c.data;
                int limit = (int) Math.min(c.bytes(), d.length);
                while (p < limit) {
                    int h = (int) HEADERS.getAcquire(c.headers, p >> SHIFT);
                    if (h == 0) {
                        // Being written. Records behind it may be needed now: pass it over when
                        // one of them is already there, or when the chunk is full (the records up
                        // to its end are all reserved). Else nothing behind it is committed yet.
                        int q = nextHeader(c.headers, p, limit);
                        if (q < 0 && c.bytes() < d.length) {
                            return;
                        }
                        int to = q < 0 ? d.length : q;
                        addPending(c, p, to);
                        passedOver++;
                        p = to;
                        continue;
                    }
                    if (pendingCount > 0) {
                        drainPending(sink);
                    }
                    if (h > 0) {
                        sink.put(d, p + 4, h - 4);
                    }
                    p += aligned(Math.abs(h));
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

    /** The offset of the first header after {@code p} and before {@code limit} that is set, or -1. */
    private static int nextHeader(int[] headers, int p, int limit) {
        for (int i = (p >> SHIFT) + 1, end = limit >> SHIFT; i < end; i++) {
            if (headers[i] != 0) {
                return i << SHIFT;
            }
        }
        return -1;
    }

    // Ranges [from, to) of a chunk passed over while their first record was being written; they
    // hold whole records (each range starts and ends at a record's start or the chunk's end).
    private static Chunk[] pendingChunk = new Chunk[4];
    private static int[] pendingFrom = new int[4];
    private static int[] pendingTo = new int[4];
    private static int pendingCount;
    // The other buffer of ranges: drainPending reads one while it refills the other.
    private static Chunk[] spareChunk = new Chunk[4];
    private static int[] spareFrom = new int[4];
    private static int[] spareTo = new int[4];
    private static long passedOver;

    private static void addPending(Chunk c, int from, int to) {
        if (pendingCount == pendingChunk.length) {
            pendingChunk = Arrays.copyOf(pendingChunk, 2 * pendingCount);
            pendingFrom = Arrays.copyOf(pendingFrom, 2 * pendingCount);
            pendingTo = Arrays.copyOf(pendingTo, 2 * pendingCount);
        }
        pendingChunk[pendingCount] = c;
        pendingFrom[pendingCount] = from;
        pendingTo[pendingCount] = to;
        pendingCount++;
    }

    /**
     * Hands over the committed records of the pending ranges, oldest range first; within a range,
     * a record still being written is passed over again as the main pass does. Something is
     * pending seldom: a writer descheduled between reservation and commit.
     */
    private static void drainPending(Sink sink) {
        int n = pendingCount;
        Chunk[] chunks = pendingChunk;
        int[] from = pendingFrom;
        int[] to = pendingTo;
        pendingChunk = spareChunk;
        pendingFrom = spareFrom;
        pendingTo = spareTo;
        pendingCount = 0;
        spareChunk = chunks;
        spareFrom = from;
        spareTo = to;
        for (int i = 0; i < n; i++) {
            Chunk c = chunks[i];
            int p = from[i];
            int end = to[i];
            while (p < end) {
                int h = (int) HEADERS.getAcquire(c.headers, p >> SHIFT);
                if (h == 0) {
                    int q = nextHeader(c.headers, p, end);
                    int stop = q < 0 ? end : q;
                    addPending(c, p, stop);
                    p = stop;
                    continue;
                }
                if (h > 0) {
                    sink.put(c.data, p + 4, h - 4);
                }
                p += aligned(Math.abs(h));
            }
        }
        Arrays.fill(chunks, 0, n, null);
    }

    private static void prepareNext() {
        Chunk cur = CURRENT.get();
        if (cur.data.length > 0 && cur.next.get() == null && cur.bytes() >= cur.data.length / 2) {
            cur.next.compareAndSet(null, new Chunk(CHUNK, UNNUMBERED));
        }
    }

    /** Ranges still passed over: none once every reservation was committed or abandoned. */
    static synchronized int pendingRanges() {
        return pendingCount;
    }

    /** How often a reader passed over a record still being written. */
    static synchronized long passedOver() {
        return passedOver;
    }

    /** Drops every record and chunk: nothing reads the log any more. */
    static synchronized void clear() {
        // Numbered on from the last chunk (a writer racing with the close may still repeat an
        // id of it, but nothing is delivered any more: the agent never learns either).
        Chunk cur = CURRENT.get();
        Chunk empty = new Chunk(0, cur.id(cur.reserved));
        CURRENT.set(empty);
        readChunk = empty;
        readPos = 0;
        Arrays.fill(pendingChunk, null);
        Arrays.fill(spareChunk, null);
        pendingCount = 0;
    }
}
