package dev.jfrctx.internal;

import java.util.Arrays;

/**
 * One immutable context map: {@code kv = [k0, v0, k1, v1, ...]} sorted by key (natural
 * {@link String} order), unique keys, plus the agent's id for it (0 for the empty context and
 * whenever the agent is absent). Each distinct non-empty map is interned with exactly one
 * {@code Definitions.define} call (no JNI; {@code Natives.intern} with an older agent); the id is
 * released when the scope that built it closes, or, once it is used beyond that scope, when this
 * object becomes unreachable (see {@link #share}).
 * <b>Not API</b>.
 */
public final class ContextData {

    /** The empty context, id 0. */
    public static final ContextData EMPTY = new ContextData(new String[0], 0, false);

    private final String[] kv;
    private final long id;
    private final int hash;
    /** Built private: released by the closing of the scope that installs it, unless shared. */
    private final boolean bornPrivate;

    private ContextData(String[] kv, long id, boolean bornPrivate) {
        this.kv = kv;
        this.id = id;
        this.hash = Arrays.hashCode(kv);
        this.bornPrivate = bornPrivate;
    }

    /** The content hash of the map (not of the id), computed once. */
    int hash() {
        return hash;
    }

    /** The total length of keys and values, in chars. */
    int chars() {
        int c = 0;
        for (String s : kv) {
            c += s.length();
        }
        return c;
    }

    /**
     * Returns the agent id of this map.
     *
     * @return the id, 0 when empty or when there is no agent
     */
    public long id() {
        return id;
    }

    /**
     * Returns the number of entries.
     *
     * @return the size
     */
    public int size() {
        return kv.length >> 1;
    }

    /**
     * Returns whether the map has an entry for {@code key}.
     *
     * @param key the key name
     * @return true when present
     */
    public boolean containsKey(String key) {
        int lo = 0;
        int hi = size() - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            int cmp = kv[mid << 1].compareTo(key);
            if (cmp < 0) {
                lo = mid + 1;
            } else if (cmp > 0) {
                hi = mid - 1;
            } else {
                return true;
            }
        }
        return false;
    }

    /**
     * Returns this map overridden by {@code entries}: every entry of {@code entries} wins over an
     * entry of this map with the same key. Does not intern anything.
     *
     * @param entries the overriding entries
     * @return the merged {@code kv} array, or null when the result equals this map
     */
    public String[] mergedWith(EntryList entries) {
        int n = size();
        int m = entries.size();
        String[] out = new String[(n + m) << 1];
        int i = 0;
        int j = 0;
        int o = 0;
        boolean changed = false;
        while (i < n || j < m) {
            int cmp = i == n ? 1 : j == m ? -1 : kv[i << 1].compareTo(entries.key(j));
            if (cmp < 0) {
                out[o++] = kv[i << 1];
                out[o++] = kv[(i << 1) + 1];
                i++;
            } else {
                String value = entries.value(j);
                changed |= cmp > 0 || !value.equals(kv[(i << 1) + 1]);
                out[o++] = entries.key(j);
                out[o++] = value;
                j++;
                if (cmp == 0) {
                    i++;
                }
            }
        }
        if (!changed) {
            return null;
        }
        return o == out.length ? out : Arrays.copyOf(out, o);
    }

    /**
     * Creates the context for {@code kv}, interning it with the agent when the agent is live.
     * A <em>private</em> context must be installed at once by exactly one scope on the calling
     * thread ({@link ThreadState#open}); its id is released when that scope closes unless it was
     * {@link #share shared} before. A shared one is released when it becomes unreachable.
     *
     * @param kv sorted, unique-key {@code [k0, v0, ...]}; owned by the result from now on
     * @param shared whether the context is shared from the start
     * @return the new context
     */
    public static ContextData of(String[] kv, boolean shared) {
        if (kv.length == 0) {
            return EMPTY;
        }
        if (!AgentLink.isLive()) {
            return new ContextData(kv, 0, false);
        }
        long id = AgentLink.definesWithoutJni()
                ? AgentLink.define(kv, null)
                : AgentLink.intern(kv, Reclamation.drainReleasedContexts());
        ContextData data = new ContextData(kv, id, id != 0 && !shared);
        if (id != 0 && shared) {
            Reclamation.releaseContextWhenUnreachable(data, id);
        }
        return data;
    }

    // ---- who releases the id ----------------------------------------------------------------
    //
    // A map built for the first time is private: only the scope that installs it (on the thread
    // that built it) uses it, so its id is released when that scope closes, with no Cleaner and
    // no reference for the GC to process: the common case of a map that holds a request id. A
    // map used anywhere else first becomes shared (one CAS, then a Cleaner, as for every map
    // before): a snapshot of it, a build that finds it in the cache or in a builder's last
    // result. Only the owner's close moves a private map to released and only a share moves it
    // to shared; whichever CAS wins decides. A build that finds a released map builds a new one,
    // shared from the start: the map is evidently used again and again.
    //
    // `born private` is final, so a thread that finds this object through the cache's racy
    // publication sees it; `fate` starts at 0 without a write (no fence when created).

    /** {@link #fate}: still private (when born private). */
    private static final int UNDECIDED = 0;
    /** {@link #fate}: shared; released when unreachable (Cleaner). */
    private static final int SHARED = 1;
    /** {@link #fate}: released by its building scope's close; never installed again. */
    private static final int RELEASED = 2;

    private static final java.lang.invoke.VarHandle FATE;

    static {
        try {
            FATE = java.lang.invoke.MethodHandles.lookup()
                    .findVarHandle(ContextData.class, "fate", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Changes only by CAS, and only when {@link #bornPrivate}. */
    private volatile int fate;

    /**
     * Returns whether this context is shared (the usual case for a context found again).
     *
     * @return true when its id is released only when it becomes unreachable
     */
    public boolean isShared() {
        return !bornPrivate || fate == SHARED;
    }

    /** Whether this context is still private to the scope that built it. */
    boolean isPrivate() {
        return bornPrivate && fate == UNDECIDED;
    }

    /**
     * Makes this context usable beyond the scope that built it: from now on its id is released
     * only when it becomes unreachable.
     *
     * @return false when it was already released (it must not be installed again)
     */
    public boolean share() {
        if (isShared()) {
            return true;
        }
        if (FATE.compareAndSet(this, UNDECIDED, SHARED)) {
            Reclamation.releaseContextWhenUnreachable(this, id);
            return true;
        }
        return fate == SHARED;
    }

    /** Called when the scope that built this context closes: releases its id if still private. */
    void releaseIfPrivate() {
        if (isPrivate() && FATE.compareAndSet(this, UNDECIDED, RELEASED)) {
            Reclamation.release(id);
        }
    }
}
