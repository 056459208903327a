package dev.jfrctx.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;

/**
 * The producer side of one thread's transition ring (layout and protocol: ARCHITECTURE.md, "Thread
 * ring"). Only the owning thread may call {@link #transition}. <b>Not API</b>.
 *
 * <p>No JNI call, no lock, no allocation per transition. With the agent, {@link #transition}
 * calls the agent's {@code RingWriter} through a constant method handle: plain aligned 8-byte
 * stores at the ring's address with the JDK's internal {@code Unsafe}, ordered by explicit
 * fences, which C2 inlines as a few instructions. Without it (the agent could not export what it
 * needs, or in tests), it writes through a native-order {@link LongBuffer} view with
 * {@link VarHandle} fences ({@code releaseFence} before a store = {@code setRelease}); each such
 * access compiles to about 150 bytes (bounds, memory-session and exception checks), which made
 * the facade's switch methods too big for C2 to inline into their callers on JDK 21 and 25 once
 * compiled on their own ("already compiled into a big method"), so their scope objects escaped.
 * The stores are atomic: the ring is 8-byte aligned, every field is at a multiple of 8, and an
 * aligned {@code long} store is a single instruction on the 64-bit JVMs the agent supports.
 */
public final class ThreadLog {

    /** Byte offsets of the header fields. */
    static final int HEAD = 0;
    static final int TAIL = 8;
    /** Header word 2: a spare's claim (the claimer's thread id + 1), see {@code RingPool}. */
    static final int CLAIM = 16;
    static final int CAPACITY = 24;
    static final int THREAD_ID = 32;
    static final int HANDLE = 40;
    static final int ENTRIES = 64;
    static final int ENTRY_SIZE = 16;

    private static final VarHandle LONGS =
            MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());

    /**
     * The header's attention word, written by the agent only: its low 32 bits a capacity it asks
     * this ring to move to (0: none), bit {@link #WAKE_HINT} set while its worker sleeps long.
     */
    static final int GROW = 48;
    /** The capacity bits of the attention word. */
    static final long GROW_CAPACITY = 0xFFFF_FFFFL;
    /** The attention word's bit that asks for {@code Natives.wake} ({@link WorkerWake}). */
    static final long WAKE_HINT = 1L << 62;

    /** Word indices (byte offset / 8) of the fields written per transition. */
    private static final int HEAD_WORD = HEAD / 8;
    private static final int ENTRIES_WORD = ENTRIES / 8;
    private static final int GROW_WORD = GROW / 8;


    /**
     * The ring as native-order longs: the path {@link #transition} writes through without a ring
     * writer. This and the two fields below change only when the ring grows (on this thread).
     */
    private LongBuffer words;
    /**
     * The ring's address when the agent's {@code RingWriter} writes it (the usual case), else 0.
     */
    private long address;
    /**
     * A bigger ring from {@code Natives.growAddress} (its address) or {@code Natives.grow} not
     * adopted yet (a StackOverflowError came between): {@link #address} is 0 meanwhile, so the
     * next transition adopts it first.
     */
    private long grownAt;
    private ByteBuffer grown;
    /**
     * A spare ring reserved from the agent's queue and not claimed yet (its address), with the
     * claiming thread's id: {@link #address} is 0 meanwhile, so the first transition claims
     * it ({@link #claimSpare}) out of the switch's inlined path.
     */
    private long spare;
    private long claimer;
    private int mask;
    private final long handle;
    /**
     * Transitions on the ring as of this log's last write (-1 before the first): while
     * {@code head} still says {@code n}, no other copy of the facade wrote in between. Only the
     * owning thread touches it.
     */
    private long n;
    /** The Cleaner's release of this log's holder, cancelled by {@link #retire}. */
    private Reclamation.ReleaseRing release;

    /** Returned by {@link #transition} when no other log wrote since this one's last write. */
    public static final long SAME = Long.MIN_VALUE;

    /**
     * Wraps a ring whose header ({@code capacity}, {@code handle}) is already initialised. Reads
     * {@code capacity} and {@code handle} once; continues after the entries already counted in
     * {@code head}. Several logs may wrap one ring (one per copy of the facade, each in its own
     * class loader, on the same thread): each transition continues from {@code head}, so they
     * write one sequence.
     *
     * @param ring a direct buffer of at least {@code 64 + 16 * capacity} bytes
     * @throws IllegalArgumentException when the buffer is not direct, is too small, is not 8-byte
     *     aligned, or {@code capacity} is not a positive power of two
     */
    public ThreadLog(ByteBuffer ring) {
        ByteBuffer r = check(ring);
        this.handle = (long) LONGS.get(r, HANDLE);
        adopt(r);
    }

    /**
     * Wraps a ring the agent made (header initialised: a registered ring handed out as its
     * address), written through the agent's ring writer only: no buffer view.
     *
     * @param address the ring's address (from {@code Natives.registerAddress})
     * @throws IllegalArgumentException when the header's capacity is not a positive power of two
     *     or there is no ring writer
     */
    ThreadLog(long address) {
        if (address == 0 || AgentLink.RING_TRANSITION == null || AgentLink.RING_GET == null) {
            throw new IllegalArgumentException("jfrctx: a ring address needs the agent's ring writer");
        }
        this.address = address;
        this.mask = maskAt(address);
        this.handle = get(address + HANDLE);
        this.n = -1;
    }

    /**
     * Wraps a spare ring reserved from the agent's queue ({@code RingPool.reserve}), with the
     * handle and capacity the queue gave: nothing of the ring is read (its memory is cold here;
     * ARCHITECTURE.md, "Spare rings"). The first transition claims it for thread
     * {@code javaThreadId}.
     *
     * @param spare the ring's address
     * @param handle its handle
     * @param capacity its capacity
     * @param javaThreadId the calling thread's id
     * @throws IllegalArgumentException when the capacity is not a positive power of two or there
     *     is no ring writer
     */
    ThreadLog(long spare, long handle, long capacity, long javaThreadId) {
        if (spare == 0 || AgentLink.RING_TRANSITION == null || AgentLink.RING_CLAIM_FIRST == null) {
            throw new IllegalArgumentException("jfrctx: a spare needs the agent's ring writer");
        }
        this.spare = spare;
        this.claimer = javaThreadId;
        this.mask = maskOf(capacity);
        this.handle = handle;
        this.n = -1;
    }

    /** The index mask of the ring at {@code address}, from its header's capacity. */
    private static int maskAt(long address) {
        return maskOf(get(address + CAPACITY));
    }

    /** The index mask of a ring of {@code capacity} entries. */
    private static int maskOf(long capacity) {
        if (capacity <= 0 || capacity > Integer.MAX_VALUE || (capacity & (capacity - 1)) != 0) {
            throw new IllegalArgumentException("jfrctx: bad ring capacity " + capacity);
        }
        return (int) (capacity - 1);
    }

    /** A header or entry word through the ring writer (which must exist). */
    private static long get(long wordAddress) {
        try {
            return (long) AgentLink.RING_GET.invokeExact(wordAddress);
        } catch (RuntimeException | Error e) { // a StackOverflowError: the caller's, as is
            throw e;
        } catch (Throwable t) { // cannot happen: it only reads memory
            throw new IllegalStateException("jfrctx: ring writer failed", t);
        }
    }

    /** The word at byte offset {@code offset} of the ring, through whichever path writes it. */
    private long word(int offset) {
        long a = address != 0 ? address : spare;
        return a != 0 && AgentLink.RING_GET != null ? get(a + offset) : words.get(offset / 8);
    }

    /** Validates a ring buffer; returns a duplicate with absolute indices. */
    private static ByteBuffer check(ByteBuffer ring) {
        if (!ring.isDirect() || ring.isReadOnly()) {
            throw new IllegalArgumentException("jfrctx: ring must be a writable direct buffer");
        }
        if (ring.capacity() < ENTRIES) {
            throw new IllegalArgumentException("jfrctx: ring too small: " + ring.capacity() + " bytes");
        }
        if (ring.alignmentOffset(0, 8) != 0) {
            throw new IllegalArgumentException("jfrctx: ring is not 8-byte aligned");
        }
        ring = ring.duplicate().clear(); // indices are absolute; ignore the caller's position/limit
        long capacity = (long) LONGS.get(ring, CAPACITY);
        if (capacity <= 0 || (capacity & (capacity - 1)) != 0
                || capacity > (ring.capacity() - ENTRIES) / ENTRY_SIZE) {
            throw new IllegalArgumentException("jfrctx: bad ring capacity " + capacity
                    + " for a buffer of " + ring.capacity() + " bytes");
        }
        return ring;
    }

    /** Writes to {@code ring} (checked) from now on. */
    private void adopt(ByteBuffer ring) {
        long capacity = (long) LONGS.get(ring, CAPACITY);
        this.words = ring.order(ByteOrder.nativeOrder()).asLongBuffer();
        this.mask = (int) (capacity - 1);
        this.n = -1; // unknown: the first transition reads what the ring holds
        this.address = addressOf(ring);
    }

    /** The ring's address for the agent's ring writer, 0 without one (or when it fails). */
    private static long addressOf(ByteBuffer ring) {
        if (AgentLink.BUFFER_ADDRESS == null || AgentLink.RING_TRANSITION == null || AgentLink.RING_GET == null) {
            return 0;
        }
        try {
            return (long) AgentLink.BUFFER_ADDRESS.invokeExact(ring);
        } catch (Throwable t) {
            return 0;
        }
    }

    /**
     * Returns whether transitions go through the agent's ring writer (else the buffer view).
     *
     * @return true with the ring writer
     */
    public boolean usesRingWriter() {
        return address != 0 || spare != 0;
    }

    /**
     * Opens a ring for the calling thread: a spare from the agent (no JNI call), else one
     * registered through {@code Natives.registerAddress} (or {@code Natives.register} without
     * the ring writer): the thread already holds a ring through another copy of the facade, no
     * spare was to be had, or the agent makes none ({@code spares=off}). A spare is claimed by
     * the log's first transition.
     *
     * @param owned the thread's private contexts, released with the ring if the thread ends with
     *     scopes open
     * @return the thread's log, or null when there is no agent, it is stopped, or it failed
     */
    static ThreadLog openForCurrentThread(OwnedContexts owned) {
        @SuppressWarnings("deprecation") // Thread.threadId() is JDK 19+; same value
        long tid = Thread.currentThread().getId();
        long[] reserved = new long[2]; // the spare's handle and capacity
        long spare = AgentLink.reserveSpare(reserved);
        long address = spare;
        ByteBuffer ring = null;
        if (spare == 0) {
            if (AgentLink.registersAddresses()) {
                address = AgentLink.registerAddress(tid);
                if (address == 0) {
                    return null;
                }
            } else {
                ring = AgentLink.register(tid, 0);
                if (ring == null) {
                    return null;
                }
            }
        }
        ThreadLog log;
        try {
            log = spare != 0 ? new ThreadLog(spare, reserved[0], reserved[1], tid)
                    : address != 0 ? new ThreadLog(address) : new ThreadLog(ring);
        } catch (RuntimeException e) {
            AgentLink.fail(spare != 0 ? "RingPool.reserve (unusable ring)"
                    : address != 0 ? "Natives.registerAddress (unusable ring)"
                    : "Natives.register (unusable ring)", e);
            return null;
        }
        if (spare == 0) {
            AgentLink.joined(log.handle);
        }
        log.release = Reclamation.releaseRingWhenUnreachable(log, log.handle, owned);
        if (WorkerWake.asleep()) { // a ring the worker has not seen: it cannot carry the hint
            WorkerWake.wake();
        }
        return log;
    }

    /**
     * Appends the transition to context {@code id} (timestamped with {@link System#nanoTime()}):
     * the thread's context from now on. The header's {@code current} word is not written (the
     * agent reads the entries; one store less keeps the inlined switch small).
     *
     * @param id the context id installed from now on
     * @return {@link #SAME} when this log wrote the ring's last transition (the common case);
     *     otherwise the context id the ring held before, which another copy of the facade on this
     *     thread wrote (0 on a new ring)
     */
    public long transition(long id) {
        long n;
        long a = address;
        if (AgentLink.RING_TRANSITION != null && a != 0) { // a constant, then one field test
            try {
                n = (long) AgentLink.RING_TRANSITION.invokeExact(a, (long) mask, id);
            } catch (RuntimeException | Error e) {
                // A StackOverflowError (the stack's end): not published. The ring's head may stay
                // odd (the agent then reports what follows as unknown) until the next transition
                // writes the same entry again.
                throw e;
            } catch (Throwable t) { // cannot happen: it only reads and writes memory
                throw new IllegalStateException("jfrctx: ring writer failed", t);
            }
        } else if (grownAt != 0 || grown != null) {
            adoptGrown(); // a StackOverflowError: nothing written, adopted next time
            return transition(id);
        } else if (spare != 0) {
            return claimSpare(id);
        } else {
            n = writeThroughBuffer(id);
        }
        long previous = n == this.n ? SAME : writtenByAnother(n);
        this.n = n + 1;
        if (((n + 1) & (mask >>> 1)) == 0) { // every half lap: the attention word, one load
            long attention = word(GROW);
            if (attention != 0) {
                halfLap(n + 1, id, attention);
            }
        }
        return previous;
    }

    /**
     * Out of line, the first transition on a spare ring: claims it and writes transition 0
     * ({@code RingWriter.claimFirst}, stores only), then writes through its address from now on.
     * A {@link StackOverflowError} leaves it unclaimed (or claimed with the same words), for the
     * next transition to claim again.
     *
     * @return 0: a new ring held no context
     */
    private long claimSpare(long id) {
        long s = spare;
        try {
            AgentLink.RING_CLAIM_FIRST.invokeExact(s, claimer, id);
        } catch (RuntimeException | Error e) { // a StackOverflowError: claimed next time
            throw e;
        } catch (Throwable t) { // cannot happen: it only writes memory
            throw new IllegalStateException("jfrctx: ring writer failed", t);
        }
        address = s;
        spare = 0;
        n = 1;
        return 0;
    }

    /**
     * Out of line, at a half lap whose attention word ({@link #GROW}, which only the agent writes)
     * is not 0: wakes the agent's worker from its long sleep (only while its word still says so:
     * the first thread's call clears it, so a burst on many threads makes one or a few calls), and
     * at a lap moves to a bigger ring when the agent asked. Both are rare, so the call stays cold
     * and out of line: were it inlined, {@code transition} would compile too big for C2 to inline
     * into the facade's switches, whose scope objects would then escape.
     */
    private void halfLap(long next, long id, long word) {
        try {
            if ((word & WAKE_HINT) != 0 && WorkerWake.asleep()) {
                WorkerWake.wake();
            }
            if ((next & mask) == 0 && (word & GROW_CAPACITY) > mask + 1L) {
                lapped(id);
            }
        } catch (StackOverflowError | OutOfMemoryError e) {
            // Written already; a bigger ring from the agent is adopted by the next transition.
        }
    }

    /**
     * Out of line (rarely taken, so C2 keeps it out of its callers): the agent asked for a bigger
     * ring (it found this one filling faster than it drains); moves to it ({@code Natives.grow}),
     * and the new ring starts with the context installed now. Refused (another copy of the facade
     * shares the ring): stays.
     */
    private void lapped(long id) {
        long want = word(GROW) & GROW_CAPACITY;
        if (want <= mask + 1L || want > Integer.MAX_VALUE) {
            return;
        }
        if (address != 0 && AgentLink.growsAddresses()) {
            long bigger = AgentLink.growAddress(handle, (int) want);
            if (bigger == 0) {
                return;
            }
            grownAt = bigger;
        } else {
            ByteBuffer bigger = AgentLink.grow(handle, (int) want);
            if (bigger == null) {
                return;
            }
            grown = bigger;
        }
        // The agent reads only the bigger ring from now on. Until it is adopted, transitions take
        // the path that adopts it first: whatever fails below (a StackOverflowError), the old
        // ring is written no more.
        address = 0;
        adoptGrown();
        transition(id); // the new ring starts with the context installed now
    }

    /**
     * Writes to the ring {@code Natives.growAddress} or {@code Natives.grow} handed over
     * ({@link #grownAt}, {@link #grown}) from now on. It is empty, and this log wrote the old
     * ring's last transition (the agent grows only a ring with one holder): the next transition
     * is this log's own again.
     */
    private void adoptGrown() {
        long at = grownAt;
        int grownMask = 0;
        ByteBuffer r = null;
        try {
            if (at != 0) {
                grownMask = maskAt(at);
                if (get(at + HANDLE) != handle) {
                    throw new IllegalArgumentException("jfrctx: grown ring has another handle");
                }
            } else {
                r = check(grown);
                if ((long) LONGS.get(r, HANDLE) != handle) {
                    throw new IllegalArgumentException("jfrctx: grown ring has another handle");
                }
            }
        } catch (RuntimeException e) {
            // The agent has already let go of the old ring: write to neither from now on (a heap
            // buffer nobody reads).
            grown = null;
            grownAt = 0;
            words = LongBuffer.allocate(ENTRIES_WORD + 2 * 16);
            mask = 15;
            address = 0;
            n = -1;
            AgentLink.fail("Natives.grow (unusable ring)", e);
            return;
        }
        if (at != 0) {
            mask = grownMask;
            grownAt = 0;
            address = at;
        } else {
            adopt(r);
            grown = null;
        }
        n = 0;
    }

    /** {@link #transition} without the agent's ring writer; returns {@code n}. */
    private long writeThroughBuffer(long id) {
        LongBuffer w = words;
        // From the ring, not the field: another copy of the facade on this thread may have
        // written to the same ring since (only this thread writes it: a plain read is the latest).
        long n = w.get(HEAD_WORD) >>> 1;
        int entry = ENTRIES_WORD + 2 * ((int) n & mask);
        VarHandle.releaseFence(); // head = 2n+1 with release semantics
        w.put(HEAD_WORD, 2 * n + 1);
        // The entry's stores must not become visible before the odd head (seqlock writer).
        VarHandle.storeStoreFence();
        long t = System.nanoTime();
        w.put(entry, t);
        w.put(entry + 1, id);
        VarHandle.releaseFence(); // head = 2n+2 with release semantics
        w.put(HEAD_WORD, 2 * n + 2);
        return n;
    }

    /**
     * Out of line (rare: several facade copies on one thread): the context of the newest entry,
     * which another copy wrote.
     */
    private long writtenByAnother(long n) {
        return n == 0 ? 0 : word(ENTRIES + ENTRY_SIZE * ((int) (n - 1) & mask) + 8);
    }

    /**
     * Hands the ring back to the agent now, after this thread's last transition on it, instead of
     * when a GC finds this log unreachable: one header store ({@code retired += 1}, release), no
     * JNI call; the agent drains the ring and releases this holder at its next round. The log
     * must not be written afterwards. Used by virtual threads when their outermost context
     * closes, so that the agent does not keep visiting the rings of threads that have ended.
     *
     * @return false when the agent cannot take a ring back this way (nothing was done)
     */
    boolean retire() {
        Reclamation.ReleaseRing r = release;
        long a = address;
        if (r == null || AgentLink.RING_RETIRE == null || a == 0) {
            return false; // without the agent's ring writer the Cleaner hands it back
        }
        try {
            AgentLink.RING_RETIRE.invokeExact(a);
        } catch (Throwable t) { // cannot happen: it only reads and writes memory
            return false;
        }
        release = null;
        r.cancel();
        AgentLink.left(handle);
        return true;
    }

    /**
     * Returns the number of transitions written to the ring (by this log and any other on it).
     *
     * @return the count
     */
    public long transitions() {
        return word(HEAD) >>> 1;
    }

    /**
     * Returns the ring's registry handle.
     *
     * @return the handle read at creation
     */
    public long handle() {
        return handle;
    }
}
