package dev.jfrctx.internal;

import java.util.Arrays;

/**
 * One immutable context map: {@code kv = [k0, v0, k1, v1, ...]} sorted by key (natural
 * {@link String} order), unique keys, plus the agent's id for it (0 for the empty context and
 * whenever the agent is absent). Each distinct non-empty map is interned with exactly one
 * {@code Definitions.define} call (no JNI; {@code Natives.intern} with an older agent); the id is
 * released when this object becomes unreachable.
 * <b>Not API</b>.
 */
public final class ContextData {

    /** The empty context, id 0. */
    public static final ContextData EMPTY = new ContextData(new String[0], 0);

    private final String[] kv;
    private final long id;
    private final int hash;

    private ContextData(String[] kv, long id) {
        this.kv = kv;
        this.id = id;
        this.hash = Arrays.hashCode(kv);
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
     *
     * @param kv sorted, unique-key {@code [k0, v0, ...]}; owned by the result from now on
     * @return the new context
     */
    public static ContextData of(String[] kv) {
        if (kv.length == 0) {
            return EMPTY;
        }
        if (!AgentLink.isLive()) {
            return new ContextData(kv, 0);
        }
        long id = AgentLink.definesWithoutJni()
                ? AgentLink.define(kv, null)
                : AgentLink.intern(kv, Reclamation.drainReleasedContexts());
        ContextData data = new ContextData(kv, id);
        if (id != 0) {
            Reclamation.releaseContextWhenUnreachable(data, id);
        }
        return data;
    }
}
