package dev.jfrctx.agent;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * The producer side of a thread ring (ARCHITECTURE.md, "Thread ring"), written with the JDK's
 * internal {@code Unsafe} at a raw address: each access compiles to one machine instruction, so a
 * context switch inlines into its caller as a few dozen bytes of code. (A direct
 * {@code LongBuffer} costs a bounds check, a memory-session check and an exception handler per
 * access, about 150 bytes each: five of them pushed the facade's {@code build()} past C2's
 * inlining budget for already-compiled methods, and its scope object then escaped.)
 *
 * <p>{@code jdk.internal.misc} is not exported; the agent exports it to this class's module only
 * (the unnamed module of the boot loader) before it defines the natives, as it opens JFR's
 * internals for {@code latency=live}. Without that export this class fails to initialise and the
 * facade writes through its {@code LongBuffer} instead. The Unsafe methods are reached through
 * constant method handles (no compile-time dependency on an internal class: the bridge is
 * compiled with {@code --release 17}); C2 inlines them as the intrinsics they are.
 *
 * <p>Raw addresses: callers pass the address of a ring the agent allocated for the calling
 * thread. Like {@code sun.misc.Unsafe}, which every application can already reach, this class
 * trusts its callers.
 */
public final class RingWriter {

    private static final int HEAD = 0;
    private static final int ENTRIES = 64;

    private static final MethodHandle GET_LONG;
    private static final MethodHandle GET_LONG_ACQUIRE;
    private static final MethodHandle CAS_LONG;
    private static final MethodHandle PUT_LONG;
    private static final MethodHandle STORE_FENCE;
    private static final MethodHandle STORE_STORE_FENCE;
    private static final MethodHandle BUFFER_ADDRESS;

    static {
        try {
            Class<?> unsafeClass = Class.forName("jdk.internal.misc.Unsafe");
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            Object unsafe = lookup.findStatic(unsafeClass, "getUnsafe", MethodType.methodType(unsafeClass))
                    .invoke();
            GET_LONG = lookup.findVirtual(unsafeClass, "getLong", MethodType.methodType(long.class, long.class))
                    .bindTo(unsafe);
            // At a raw address: the object argument is null.
            GET_LONG_ACQUIRE = MethodHandles.insertArguments(lookup.findVirtual(unsafeClass, "getLongAcquire",
                    MethodType.methodType(long.class, Object.class, long.class)).bindTo(unsafe), 0, (Object) null);
            CAS_LONG = MethodHandles.insertArguments(lookup.findVirtual(unsafeClass, "compareAndSetLong",
                    MethodType.methodType(boolean.class, Object.class, long.class, long.class, long.class))
                    .bindTo(unsafe), 0, (Object) null);
            PUT_LONG = lookup.findVirtual(unsafeClass, "putLong",
                    MethodType.methodType(void.class, long.class, long.class)).bindTo(unsafe);
            STORE_FENCE = lookup.findVirtual(unsafeClass, "storeFence", MethodType.methodType(void.class))
                    .bindTo(unsafe);
            STORE_STORE_FENCE = lookup.findVirtual(unsafeClass, "storeStoreFence",
                    MethodType.methodType(void.class)).bindTo(unsafe);
            long addressOffset = (long) lookup.findVirtual(unsafeClass, "objectFieldOffset",
                    MethodType.methodType(long.class, Class.class, String.class))
                    .invoke(unsafe, java.nio.Buffer.class, "address");
            BUFFER_ADDRESS = MethodHandles.insertArguments(lookup.findVirtual(unsafeClass, "getLong",
                    MethodType.methodType(long.class, Object.class, long.class)).bindTo(unsafe), 1, addressOffset)
                    .asType(MethodType.methodType(long.class, java.nio.ByteBuffer.class));
        } catch (Throwable t) {
            throw new ExceptionInInitializerError(t);
        }
    }

    private RingWriter() {}

    /**
     * Appends the transition to context {@code id} to the ring at {@code ring}: {@code head =
     * 2n+1} (release), a store-store fence, {@code time = System.nanoTime()}, the entry, {@code
     * head = 2n+2} (release). Only the ring's thread may call it.
     *
     * @param ring the ring's address
     * @param mask its capacity minus one
     * @param id the context id installed from now on
     * @return {@code n}: the transitions on the ring before this one
     * @throws Throwable never: declared by the method handles' {@code invokeExact}
     */
    public static long transition(long ring, long mask, long id) throws Throwable {
        long n = (long) GET_LONG.invokeExact(ring + HEAD) >>> 1;
        write(ring, ring + ENTRIES + ((n & mask) << 4), n, id);
        return n;
    }

    /** Writes transition {@code n} into {@code entry} (its slot), as {@link #transition} says. */
    private static void write(long ring, long entry, long n, long id) throws Throwable {
        STORE_FENCE.invokeExact(); // head = 2n+1 with release semantics
        PUT_LONG.invokeExact(ring + HEAD, 2 * n + 1);
        // The entry's stores must not become visible before the odd head (seqlock writer).
        STORE_STORE_FENCE.invokeExact();
        long t = System.nanoTime();
        PUT_LONG.invokeExact(entry, t);
        PUT_LONG.invokeExact(entry + 8, id);
        STORE_FENCE.invokeExact(); // head = 2n+2 with release semantics
        PUT_LONG.invokeExact(ring + HEAD, 2 * n + 2);
    }

    /** Byte offset of the header word counting hand-backs of the ring. */
    private static final long RETIRED = 56;

    /**
     * Hands the ring at {@code ring} back to the agent (one holder gone), after this thread's
     * last transition on it: {@code retired += 1} with release semantics, so the agent, which
     * reads it before draining, also sees that transition. Only the ring's thread may call it,
     * and it must not write to the ring afterwards.
     *
     * @param ring the ring's address
     * @throws Throwable never: declared by the method handles' {@code invokeExact}
     */
    public static void retire(long ring) throws Throwable {
        long n = (long) GET_LONG.invokeExact(ring + RETIRED);
        STORE_FENCE.invokeExact();
        PUT_LONG.invokeExact(ring + RETIRED, n + 1);
    }

    /** Byte offset of the header word a thread claims a spare ring with. */
    private static final long CLAIM = 16;

    /**
     * Claims the spare ring at {@code ring} for the calling thread: {@code claim = id + 1}
     * (release). Only the thread that took the ring from {@code RingPool} may call it, once,
     * before its first transition.
     *
     * @param ring the ring's address
     * @param javaThreadId the calling thread's id
     * @throws Throwable never: declared by the method handles' {@code invokeExact}
     */
    public static void claim(long ring, long javaThreadId) throws Throwable {
        STORE_FENCE.invokeExact();
        PUT_LONG.invokeExact(ring + CLAIM, javaThreadId + 1);
    }

    /**
     * Claims the spare ring at {@code ring} ({@link #claim}) and appends its first transition,
     * to context {@code id}, as {@link #transition} would on a ring whose {@code head} is 0 —
     * without reading anything of the ring. A spare's memory is cold on the taking core: a load
     * of its header waits for the line, and so does any fence after a store to it, so a spare's
     * opening stores to it last and reads nothing of it (ARCHITECTURE.md, "Spare rings"). Only
     * the thread that reserved the ring ({@code RingPool.reserve}) may call it, before any other
     * write to the ring; again after a {@link StackOverflowError} in it (it writes the same).
     *
     * @param ring the ring's address
     * @param javaThreadId the calling thread's id
     * @param id the context id installed from now on
     * @throws Throwable never: declared by the method handles' {@code invokeExact}
     */
    public static void claimFirst(long ring, long javaThreadId, long id) throws Throwable {
        claim(ring, javaThreadId);
        write(ring, ring + ENTRIES, 0, id);
    }

    /**
     * Byte offsets in the spare queue: words 0, 1, 2, 8, and from 16 two words per slot
     * (ARCHITECTURE.md, "Spare rings").
     */
    private static final long QUEUE_HEAD = 0;
    private static final long QUEUE_SLOTS = 8;
    private static final long QUEUE_CAPACITY = 16;
    private static final long QUEUE_TAIL = 64;
    private static final long QUEUE_FIRST_SLOT = 128;

    /**
     * Reserves the oldest spare ring of the agent's spare queue at {@code queue} for the calling
     * thread, without claiming it: reads {@code head} and {@code tail} (acquire); none when they
     * are equal; else reads slot {@code head} (the ring's address and handle) and the spares'
     * capacity, then moves {@code head} on by one with a compare-and-set, and owns the ring only
     * if that succeeded (the agent writes a slot again only once {@code head} has passed it),
     * retrying otherwise. Nothing of the ring itself is read: its first transition claims it
     * ({@link #claimFirst}).
     *
     * @param queue the queue's address ({@code Natives.spareQueue})
     * @param out receives the ring's handle ({@code out[0]}) and capacity ({@code out[1]})
     * @return the reserved ring's address, 0 when none was waiting
     * @throws Throwable never: declared by the method handles' {@code invokeExact}
     */
    public static long reserveSpare(long queue, long[] out) throws Throwable {
        long mask = (long) GET_LONG.invokeExact(queue + QUEUE_SLOTS) - 1;
        while (true) {
            long h = (long) GET_LONG_ACQUIRE.invokeExact(queue + QUEUE_HEAD);
            long t = (long) GET_LONG_ACQUIRE.invokeExact(queue + QUEUE_TAIL);
            if (h >= t) {
                return 0;
            }
            long slot = queue + QUEUE_FIRST_SLOT + ((h & mask) << 4);
            long ring = (long) GET_LONG.invokeExact(slot);
            long handle = (long) GET_LONG.invokeExact(slot + 8);
            long capacity = (long) GET_LONG.invokeExact(queue + QUEUE_CAPACITY);
            if ((boolean) CAS_LONG.invokeExact(queue + QUEUE_HEAD, h, h + 1)) {
                out[0] = handle;
                out[1] = capacity;
                return ring;
            }
        }
    }

    /**
     * The address of a direct buffer's memory.
     *
     * @param buffer a direct buffer (a ring from {@code Natives.register})
     * @return its address, 0 for a heap buffer
     * @throws Throwable never: declared by the method handles' {@code invokeExact}
     */
    public static long address(java.nio.ByteBuffer buffer) throws Throwable {
        return buffer.isDirect() ? (long) BUFFER_ADDRESS.invokeExact(buffer) : 0L;
    }

    /**
     * Runs every method here once, on scratch memory, so that their first run (each method
     * handle's first invocation spins classes) happens at VMInit ({@code StreamBridge.start})
     * and not on an application thread at the end of its stack, where it would throw
     * {@code StackOverflowError} in the middle of that work.
     *
     * @throws Throwable when the ring writer cannot work (the facade then writes through buffers)
     */
    static void warm() throws Throwable {
        java.nio.ByteBuffer ring = java.nio.ByteBuffer.allocateDirect(ENTRIES + 2 * 16);
        java.nio.ByteBuffer queue = java.nio.ByteBuffer.allocateDirect((int) QUEUE_FIRST_SLOT + 16);
        long r = address(ring);
        long q = address(queue);
        PUT_LONG.invokeExact(q + QUEUE_SLOTS, 1L);
        PUT_LONG.invokeExact(q + QUEUE_CAPACITY, 2L);
        PUT_LONG.invokeExact(q + QUEUE_TAIL, 1L);
        PUT_LONG.invokeExact(q + QUEUE_FIRST_SLOT, r);
        PUT_LONG.invokeExact(q + QUEUE_FIRST_SLOT + 8, 7L);
        long[] taken = new long[2];
        if (reserveSpare(q, taken) != r || taken[0] != 7 || taken[1] != 2) {
            throw new IllegalStateException("the ring writer misread its scratch queue");
        }
        claimFirst(r, 0, 0);
        claim(r, 0);
        if (transition(r, 1, 0) != 1 || get(r + HEAD) != 4) {
            throw new IllegalStateException("the ring writer misread its scratch ring");
        }
        retire(r);
        java.lang.ref.Reference.reachabilityFence(ring);
        java.lang.ref.Reference.reachabilityFence(queue);
    }

    /**
     * Reads the word at {@code address} of a ring (a header field).
     *
     * @param address the word's address
     * @return its value
     * @throws Throwable never: declared by the method handles' {@code invokeExact}
     */
    public static long get(long address) throws Throwable {
        return (long) GET_LONG.invokeExact(address);
    }
}
