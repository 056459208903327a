package dev.jfrctx.internal;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;

/**
 * The link to the jfrctx agent's natives: rings, context maps, the filter and the in-process
 * listeners. <b>Not API</b>: internal to the jfrctx facade and subject to change without notice.
 *
 * <p>At class initialisation this looks up {@code dev.jfrctx.agent.Natives} (and the bridge's
 * {@code RingWriter} and {@code Definitions}) in the bootstrap class loader, where the agent
 * defines it at VMInit. When the class is absent (no agent loaded) or does
 * not have the expected methods, the link is <em>not live</em> and every method here is a cheap
 * no-op. A live link degrades to not live, permanently, the first time a native call throws: the
 * failure is reported once on {@code System.err} (prefix {@code jfrctx: }) and never propagated
 * into the application. A {@link StackOverflowError} or {@link OutOfMemoryError} is the exception:
 * it propagates, as from any other call at that point, and the link stays live.
 */
public final class AgentLink {

    private static final String NATIVES = "dev.jfrctx.agent.Natives";
    private static final String RING_WRITER = "dev.jfrctx.agent.RingWriter";
    private static final String DEFINITIONS = "dev.jfrctx.agent.Definitions";
    private static final String RING_POOL = "dev.jfrctx.agent.RingPool";

    /**
     * {@code RingPool.reserve(long[]) → long} (a ring's address), {@code RingPool.joined(long)},
     * {@code RingPool.left(long)} and {@code RingWriter.claimFirst(long, long, long)}: a thread's
     * first ring taken from the agent's spares without a JNI call, and claimed by its first
     * transition; all null with an agent that has none (or not all) or without the ring writer,
     * which spares are written through (every ring is then registered through
     * {@code Natives.register}).
     */
    private static final MethodHandle RESERVE_SPARE;
    static final MethodHandle RING_CLAIM_FIRST;
    private static final MethodHandle JOINED;
    private static final MethodHandle LEFT;

    /**
     * {@code Definitions.define(String[]) → long} and {@code Definitions.release(long)}: maps
     * numbered without a JNI call (the usual case); null with an agent that has no such class,
     * and then maps are interned through {@code Natives.intern}.
     */
    private static final MethodHandle DEFINE;
    private static final MethodHandle UNDEFINE;
    /**
     * {@code Definitions.FIRST_ID}, the first id {@code Definitions.define} hands out, read from
     * the bridge; {@code Long.MAX_VALUE} (no id is a defined one) without it.
     */
    static final long FIRST_DEFINED_ID;

    private static final MethodHandle INTERN;
    private static final MethodHandle REGISTER;
    /**
     * {@code Natives.registerAddress}, only with the ring writer (rings are then written through
     * their address and need no buffer); null otherwise (an older agent, or no ring writer).
     */
    private static final MethodHandle REGISTER_ADDRESS;
    private static final MethodHandle RELEASE;

    /**
     * {@code RingWriter.transition(long ring, long mask, long id) → long n},
     * {@code RingWriter.get(long address) → long} and {@code RingWriter.address(ByteBuffer) → long}; null when the agent has no ring writer (it
     * could not export what that needs): rings are then written through their {@code LongBuffer}.
     */
    static final MethodHandle RING_TRANSITION;
    static final MethodHandle RING_GET;
    static final MethodHandle BUFFER_ADDRESS;
    /** {@code RingWriter.retire(long ring)}; null with an agent that has none (rings are then
     * handed back by the Cleaner only). */
    static final MethodHandle RING_RETIRE;
    /** {@code Natives.grow(long handle, int capacity) → ByteBuffer}; null with an older agent. */
    private static final MethodHandle GROW;
    /**
     * {@code Natives.growAddress(long handle, int capacity) → long}, only with the ring writer;
     * null otherwise (an older agent: rings grow through {@link #GROW}).
     */
    private static final MethodHandle GROW_ADDRESS;

    /**
     * {@code Natives.setFilter(String)}, {@code Natives.setListening(boolean, long)} and
     * {@code Natives.pollSamples(long) → byte[]}: the filter and the in-process listeners. Looked up
     * on their own (they do not depend on the ring natives); all null when any is missing, and then
     * filters and listeners are no-ops.
     */
    private static final MethodHandle SET_FILTER;
    private static final MethodHandle SET_LISTENING;
    private static final MethodHandle POLL_SAMPLES;

    /**
     * Whether the agent may still be called. Written once (true → false) on the first failure. Plain
     * on purpose: a thread that sees the change late makes one more call, which is harmless.
     */
    private static boolean live;

    private static boolean reported;

    static {
        MethodHandle intern = null;
        MethodHandle register = null;
        MethodHandle release = null;
        Class<?> natives = null;
        try {
            natives = Class.forName(NATIVES, true, null);
        } catch (Throwable absent) {
            // No agent: the facade is a no-op. Not worth a message.
        }
        if (natives != null) {
            try {
                MethodHandles.Lookup lookup = MethodHandles.publicLookup();
                intern = lookup.findStatic(natives, "intern",
                        MethodType.methodType(long.class, String[].class, long[].class));
                register = lookup.findStatic(natives, "register",
                        MethodType.methodType(ByteBuffer.class, long.class, int.class));
                release = lookup.findStatic(natives, "release",
                        MethodType.methodType(void.class, long.class));
            } catch (Throwable t) {
                intern = register = release = null;
                report("looking up " + NATIVES, t);
            }
        }
        INTERN = intern;
        REGISTER = register;
        RELEASE = release;
        live = release != null;
        MethodHandle transition = null;
        MethodHandle get = null;
        MethodHandle address = null;
        if (live) {
            try {
                Class<?> writer = Class.forName(RING_WRITER, true, null);
                MethodHandles.Lookup lookup = MethodHandles.publicLookup();
                transition = lookup.findStatic(writer, "transition",
                        MethodType.methodType(long.class, long.class, long.class, long.class));
                get = lookup.findStatic(writer, "get", MethodType.methodType(long.class, long.class));
                address = lookup.findStatic(writer, "address", MethodType.methodType(long.class, ByteBuffer.class));
            } catch (Throwable absent) {
                // No ring writer (an older agent, or the export failed: the agent said so).
                transition = get = address = null;
            }
        }
        RING_TRANSITION = transition;
        RING_GET = get;
        BUFFER_ADDRESS = address;
        MethodHandle retire = null;
        if (transition != null) {
            try {
                retire = MethodHandles.publicLookup().findStatic(Class.forName(RING_WRITER, true, null),
                        "retire", MethodType.methodType(void.class, long.class));
            } catch (Throwable absent) {
                // An agent without hand-backs through the header.
            }
        }
        RING_RETIRE = retire;
        MethodHandle define = null;
        MethodHandle undefine = null;
        long firstDefined = Long.MAX_VALUE;
        if (live) {
            try {
                Class<?> definitions = Class.forName(DEFINITIONS, true, null);
                MethodHandles.Lookup lookup = MethodHandles.publicLookup();
                define = lookup.findStatic(definitions, "define",
                        MethodType.methodType(long.class, String[].class));
                undefine = lookup.findStatic(definitions, "release",
                        MethodType.methodType(void.class, long.class));
                firstDefined = (long) lookup.findStaticGetter(definitions, "FIRST_ID", long.class)
                        .invokeExact();
            } catch (Throwable absent) {
                define = undefine = null; // an older agent: intern through JNI
                firstDefined = Long.MAX_VALUE;
            }
        }
        DEFINE = define;
        UNDEFINE = undefine;
        FIRST_DEFINED_ID = firstDefined;
        // Optional natives: null with an agent that has none (rings then keep their size, or
        // grow and register as buffers).
        GROW = live ? optional(natives, "grow", MethodType.methodType(ByteBuffer.class, long.class, int.class))
                : null;
        GROW_ADDRESS = live && RING_TRANSITION != null
                ? optional(natives, "growAddress", MethodType.methodType(long.class, long.class, int.class))
                : null;
        MethodHandle reserve = null;
        MethodHandle joined = null;
        MethodHandle left = null;
        MethodHandle claimFirst = null;
        if (live && RING_TRANSITION != null) {
            try {
                Class<?> pool = Class.forName(RING_POOL, true, null);
                MethodHandles.Lookup lookup = MethodHandles.publicLookup();
                reserve = lookup.findStatic(pool, "reserve",
                        MethodType.methodType(long.class, long[].class));
                joined = lookup.findStatic(pool, "joined", MethodType.methodType(void.class, long.class));
                left = lookup.findStatic(pool, "left", MethodType.methodType(void.class, long.class));
                claimFirst = lookup.findStatic(Class.forName(RING_WRITER, true, null), "claimFirst",
                        MethodType.methodType(void.class, long.class, long.class, long.class));
            } catch (Throwable absent) {
                reserve = joined = left = claimFirst = null; // an agent without spares: register
            }
        }
        RESERVE_SPARE = reserve;
        RING_CLAIM_FIRST = claimFirst;
        REGISTER_ADDRESS = live && RING_TRANSITION != null
                ? optional(natives, "registerAddress", MethodType.methodType(long.class, long.class, int.class))
                : null;
        JOINED = joined;
        LEFT = left;
        MethodHandle filter = null;
        MethodHandle listening = null;
        MethodHandle poll = null;
        if (natives != null) {
            try {
                MethodHandles.Lookup lookup = MethodHandles.publicLookup();
                filter = lookup.findStatic(natives, "setFilter",
                        MethodType.methodType(void.class, String.class));
                listening = lookup.findStatic(natives, "setListening",
                        MethodType.methodType(void.class, boolean.class, long.class));
                poll = lookup.findStatic(natives, "pollSamples",
                        MethodType.methodType(byte[].class, long.class));
            } catch (Throwable absent) {
                filter = listening = poll = null;
            }
        }
        SET_FILTER = filter;
        SET_LISTENING = listening;
        POLL_SAMPLES = poll;
    }

    private AgentLink() {
    }

    /** The public static method {@code name} of {@code c}, or null when it has none. */
    private static MethodHandle optional(Class<?> c, String name, MethodType type) {
        try {
            return MethodHandles.publicLookup().findStatic(c, name, type);
        } catch (Throwable absent) {
            return null;
        }
    }

    /**
     * Returns whether the agent is present and has not failed.
     *
     * @return true when native calls are made
     */
    public static boolean isLive() {
        return live;
    }

    /**
     * Interns a context map ({@code Natives.intern}).
     *
     * @param kv {@code [k0, v0, k1, v1, ...]} sorted by key, unique keys
     * @param released ids whose reference is dropped, or null
     * @return the id (≥ 1), or 0 when the link is not live or the call failed
     */
    static long intern(String[] kv, long[] released) {
        if (!live) {
            return 0;
        }
        try {
            long id = (long) INTERN.invokeExact(kv, released);
            return id > 0 ? id : 0;
        } catch (Throwable t) {
            fail("Natives.intern", t);
            return 0;
        }
    }

    /**
     * Numbers a context map without a JNI call ({@code Definitions.define}); the agent learns
     * the map from the stream before any sample can need it. Falls back to {@link #intern}.
     *
     * @param kv {@code [k0, v0, k1, v1, ...]} sorted by key, unique keys; not modified afterwards
     * @param released ids to release in the fallback's JNI call (null when none)
     * @return the id (≥ 1), or 0 when the link is not live or the call failed
     */
    static long define(String[] kv, long[] released) {
        if (!live) {
            return 0;
        }
        if (DEFINE == null) {
            return intern(kv, released);
        }
        try {
            return (long) DEFINE.invokeExact(kv);
        } catch (Throwable t) {
            fail("Definitions.define", t);
            return 0;
        }
    }

    /**
     * Returns whether maps are numbered by {@link #define} without JNI.
     *
     * @return true with an agent that has {@code Definitions}
     */
    static boolean definesWithoutJni() {
        return DEFINE != null;
    }

    /**
     * Releases an id from {@link #define} ({@code Definitions.release}); safe from any thread.
     *
     * @param id the id
     */
    static void undefine(long id) {
        if (!live || UNDEFINE == null) {
            return;
        }
        try {
            UNDEFINE.invokeExact(id);
        } catch (Throwable t) {
            fail("Definitions.release", t);
        }
    }

    /**
     * Allocates the calling thread's ring ({@code Natives.register}).
     *
     * @param javaThreadId the calling thread's Java thread id
     * @param capacity entries, 0 for the agent's default
     * @return the ring, or null when the link is not live, the agent is stopped or the call failed
     */
    static ByteBuffer register(long javaThreadId, int capacity) {
        if (!live) {
            return null;
        }
        try {
            return (ByteBuffer) REGISTER.invokeExact(javaThreadId, capacity);
        } catch (Throwable t) {
            fail("Natives.register", t);
            return null;
        }
    }

    /**
     * Whether {@link #registerAddress} is there: the agent hands rings out as addresses.
     *
     * @return true with the ring writer and {@code Natives.registerAddress}
     */
    static boolean registersAddresses() {
        return REGISTER_ADDRESS != null;
    }

    /**
     * Allocates the calling thread's ring as its address ({@code Natives.registerAddress});
     * only when {@link #registersAddresses}.
     *
     * @param javaThreadId the calling thread's Java thread id
     * @return the ring's address, or 0 when the link is not live, the agent is stopped or the call
     *     failed
     */
    static long registerAddress(long javaThreadId) {
        if (!live || REGISTER_ADDRESS == null) {
            return 0;
        }
        try {
            return (long) REGISTER_ADDRESS.invokeExact(javaThreadId, 0);
        } catch (Throwable t) {
            fail("Natives.registerAddress", t);
            return 0;
        }
    }

    /**
     * Reserves a spare ring for the calling thread ({@code RingPool.reserve}, no JNI call in the
     * usual case); its first transition claims it ({@link #RING_CLAIM_FIRST}).
     *
     * @param out receives the ring's handle ({@code out[0]}) and capacity ({@code out[1]})
     * @return the ring's address, or 0: the thread already holds a ring, none was to be had, or
     *     the agent has no spares (then {@link #register})
     */
    static long reserveSpare(long[] out) {
        if (!live || RESERVE_SPARE == null) {
            return 0;
        }
        try {
            return (long) RESERVE_SPARE.invokeExact(out);
        } catch (Throwable t) {
            fail("RingPool.reserve", t);
            return 0;
        }
    }

    /**
     * Tells the spares' per-thread mark that this copy holds ring {@code handle}, registered
     * through {@link #register} ({@code RingPool.joined}): the thread takes no spare while it
     * holds a ring.
     *
     * @param handle the ring's handle
     */
    static void joined(long handle) {
        if (JOINED == null) {
            return;
        }
        try {
            JOINED.invokeExact(handle);
        } catch (Throwable t) {
            fail("RingPool.joined", t);
        }
    }

    /**
     * This copy handed ring {@code handle} back on the calling thread ({@code RingPool.left}).
     *
     * @param handle the ring's handle
     */
    static void left(long handle) {
        if (LEFT == null) {
            return;
        }
        try {
            LEFT.invokeExact(handle);
        } catch (Throwable t) {
            fail("RingPool.left", t);
        }
    }

    /**
     * Moves the calling thread's ring to a bigger one ({@code Natives.grow}).
     *
     * @param handle the ring's handle
     * @param capacity the entries asked for by the agent
     * @return the new ring, or null when refused, not live, or the call failed
     */
    static ByteBuffer grow(long handle, int capacity) {
        if (!live || GROW == null) {
            return null;
        }
        try {
            return (ByteBuffer) GROW.invokeExact(handle, capacity);
        } catch (Throwable t) {
            fail("Natives.grow", t);
            return null;
        }
    }

    /**
     * Whether {@link #growAddress} is there: the agent hands grown rings out as addresses.
     *
     * @return true with the ring writer and {@code Natives.growAddress}
     */
    static boolean growsAddresses() {
        return GROW_ADDRESS != null;
    }

    /**
     * {@link #grow}, the new ring as its address ({@code Natives.growAddress}); only when
     * {@link #growsAddresses}.
     *
     * @param handle the ring's handle
     * @param capacity the entries asked for by the agent
     * @return the new ring's address, or 0 when refused or not live
     */
    static long growAddress(long handle, int capacity) {
        if (!live || GROW_ADDRESS == null) {
            return 0;
        }
        try {
            return (long) GROW_ADDRESS.invokeExact(handle, capacity);
        } catch (Throwable t) {
            fail("Natives.growAddress", t);
            return 0;
        }
    }

    /**
     * Hands a ring back to the agent ({@code Natives.release}); a no-op when not live.
     *
     * @param handle the ring's handle
     */
    static void release(long handle) {
        if (!live) {
            return;
        }
        try {
            RELEASE.invokeExact(handle);
        } catch (Throwable t) {
            fail("Natives.release", t);
        }
    }

    /**
     * Returns whether in-process listeners can be served ({@code Natives.setListening} and
     * {@code Natives.pollSamples} exist).
     *
     * @return true with an agent that has the listener natives
     */
    public static boolean canListen() {
        return SET_LISTENING != null && POLL_SAMPLES != null;
    }

    /**
     * Hands a filter spec to the agent ({@code Natives.setFilter}); a no-op without the agent.
     * Unlike the ring natives, a failure here is the caller's: it is thrown, not swallowed.
     *
     * @param spec the text form, "" for no filter
     * @throws IllegalStateException when the native call fails with a checked exception
     */
    public static void setFilter(String spec) {
        if (SET_FILTER == null) {
            return;
        }
        try {
            SET_FILTER.invokeExact(spec);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("jfrctx: setting the filter failed: " + t, t);
        }
    }

    /**
     * Switches the agent's listener sink on or off ({@code Natives.setListening}); a no-op without
     * the agent, a failure is printed as a warning.
     *
     * @param on whether samples are kept for {@link #pollSamples}
     * @param listenerThreadId the Java thread id of the dispatcher (its own samples are left out),
     *     -1 when switching off
     */
    public static void setListening(boolean on, long listenerThreadId) {
        if (SET_LISTENING == null) {
            return;
        }
        try {
            SET_LISTENING.invokeExact(on, listenerThreadId);
        } catch (Throwable t) {
            System.err.println("jfrctx: warning: switching listeners " + (on ? "on" : "off")
                    + " failed: " + t);
        }
    }

    /**
     * Waits for the next batch of samples for the listeners ({@code Natives.pollSamples}). Only
     * called when {@link #canListen} is true.
     *
     * @param timeoutMillis how long to wait for a batch
     * @return the encoded batch, or null when none came in time
     * @throws Throwable whatever the native call throws
     */
    public static byte[] pollSamples(long timeoutMillis) throws Throwable {
        return (byte[]) POLL_SAMPLES.invokeExact(timeoutMillis);
    }

    /**
     * Degrades to not live and reports the cause once; rethrows a {@link StackOverflowError} or an
     * {@link OutOfMemoryError} instead: the calling thread's condition, not the agent's (a call at
     * the end of a deep stack), thrown as by any other call there; the link stays live.
     *
     * @param what the failed operation
     * @param t the cause
     */
    static void fail(String what, Throwable t) {
        if (t instanceof StackOverflowError || t instanceof OutOfMemoryError) {
            throw (VirtualMachineError) t;
        }
        live = false;
        report(what, t);
    }

    private static void report(String what, Throwable t) {
        synchronized (AgentLink.class) {
            if (reported) {
                return;
            }
            reported = true;
        }
        try {
            System.err.println("jfrctx: " + what + " failed (" + t + "); context recording disabled");
        } catch (Throwable ignored) {
            // Nothing more can be done.
        }
    }
}
