package dev.jfrctx.internal;

import java.lang.ref.WeakReference;
import java.util.Arrays;

/**
 * A bounded, lock-free cache from (installed context, builder entries) to the context they build,
 * so that building a map that was built before reuses its {@link ContextData} and thus its
 * interned id: no new id, no Cleaner registration, no allocation.
 * <b>Not API</b>.
 *
 * <p>Direct-mapped, {@value #SLOTS} slots; a colliding store replaces the slot. A slot is an
 * immutable object read and written without synchronisation: its fields are final, so a racing
 * reader sees either a complete slot or the previous one, never a torn one. Two threads missing
 * the same key at once may both intern the map; each {@code ContextData} then holds its own
 * reference on its own id and the agent releases each when its object becomes unreachable.
 *
 * <p>Beside the slots, a dense array holds each slot's full hash, compared before the slot is
 * read: a map that was never built (a request id) finds another hash there and misses without
 * touching the slot's objects, which another thread made long ago and which are cold in a
 * server (their loads were most of a never-seen map's build on a fresh thread,
 * bench/README.md §7, "A never-seen map on a fresh thread"). The hash and the slot are written
 * apart, so a reader may pair one with the other's predecessor: a hash that matches only lets
 * the full comparison run, which decides, and a mismatch is a miss, as a race between two
 * builders already allows.
 *
 * <p>A map takes a slot only when it is missed a second time: the first miss leaves its hash at
 * the <em>door</em> ({@link #admit}: a dense, direct-mapped array of {@value #DOOR_SLOTS} hashes,
 * a TinyLFU doorkeeper without its counters), and the second finds it there. A server's maps that
 * hold a request id are met once: they write one int at the door instead of a slot, its hash,
 * an entry and two copies of the entries, and they no longer evict the maps that do recur (every
 * such map used to take a slot, so that under a flood of them a map recurring less often than
 * its slot was overwritten was never found). The hit path never reads the door. A map that
 * recurs is numbered twice before it is cached (its second build is shared from the start, as a
 * build that finds a released map was before); one that recurs more slowly than its door slot
 * is overwritten is numbered on every build, as it was when the flood evicted it from its slot.
 *
 * <p>The cache holds both the installed context and the result only <em>weakly</em>: it never
 * delays the release of an id. A result found here is shared from then on
 * ({@link ContextData#share}); one whose building scope already released it is not installed
 * again, but tells the builder that the map recurs, so the new one is shared from the start.
 * After a GC has collected a context that nothing else used, the next build of that map numbers
 * it again. Contexts of more than
 * {@value #MAX_CHARS} chars (keys and values) are not cached, which bounds the memory the table
 * retains to ≈ {@value #SLOTS} × {@value #MAX_CHARS} chars of keys and values.
 *
 * <p>Nor are maps holding a key declared {@link #uncached}: an integration whose values never
 * recur in another builder (the OpenTelemetry bridge's {@code span_id}: one builder per span,
 * which keeps its own last result) would only evict the maps that do recur, and pay a lookup
 * in a table shared by every thread for nothing.
 */
public final class ContextCache {

    /** Number of slots, a power of two. */
    static final int SLOTS = 512;

    /** Number of hashes at the door ({@link #admit}), a power of two: it outlives a slot. */
    static final int DOOR_SLOTS = 4 * SLOTS;

    /** Largest context (sum of key and value lengths, in chars) that is cached. */
    static final int MAX_CHARS = 2048;

    /**
     * One cached (installed context, entries) → context. Immutable: a builder may keep the last
     * one it used and reuse it without looking it up again while its entries and the installed
     * context are the same.
     */
    public static final class Entry extends WeakReference<ContextData> {
        private final WeakReference<ContextData> base;
        private final String[] keys;
        private final String[] values;

        Entry(ContextData base, String[] keys, String[] values, ContextData result) {
            super(result);
            this.base = base == ContextData.EMPTY ? EMPTY_BASE : new WeakReference<>(base);
            this.keys = keys;
            this.values = values;
        }

        /**
         * Returns whether the entries extended {@code base}.
         *
         * @param base the installed context, compared by identity
         * @return true when it is this entry's base
         */
        public boolean extendsBase(ContextData base) {
            return this.base.refersTo(base);
        }

        /**
         * Returns the context built, unless it has been collected.
         *
         * @return the result, or null
         */
        public ContextData result() {
            return get();
        }
    }

    private static final WeakReference<ContextData> EMPTY_BASE = new WeakReference<>(ContextData.EMPTY);

    private static final Entry[] TABLE = new Entry[SLOTS];

    /** Each slot's {@link #hash}, written after the slot; 0 before the first. */
    private static final int[] HASHES = new int[SLOTS];

    /** The hash of the map last missed at each door slot, 0 before the first ({@link #admit}). */
    private static final int[] DOOR = new int[DOOR_SLOTS];

    /** The entries of an {@link Entry} that is not in the table (never read). */
    private static final String[] NO_STRINGS = new String[0];

    /** The key declared by {@link #uncached}, or null (almost always: one volatile read per use). */
    private static volatile String uncachedKey;

    private ContextCache() {
    }

    /** The hash of (base, entries): its low bits are the slot, all of it is compared first. */
    static int hash(ContextData base, EntryList entries) {
        int h = base.hash() * 0x9E3779B9 + entries.contentHash();
        return h ^ (h >>> 16);
    }

    static int index(ContextData base, EntryList entries) {
        return hash(base, entries) & (SLOTS - 1);
    }

    /**
     * Returns the context that {@code entries} built on {@code base} before, if still cached.
     * Allocates nothing.
     *
     * @param base the installed context (compared by identity)
     * @param entries the builder's entries (compared by content)
     * @return the cached entry (its result may still be collected before it is read), or null
     */
    public static Entry get(ContextData base, EntryList entries) {
        if (isUncached(entries)) {
            return null;
        }
        int h = hash(base, entries);
        int slot = h & (SLOTS - 1);
        if (HASHES[slot] != h) { // another map: its slot is not read
            return null;
        }
        Entry s = TABLE[slot];
        if (s == null || !s.extendsBase(base) || s.refersTo(null)) {
            return null;
        }
        String[] keys = s.keys;
        String[] values = s.values;
        int n = entries.size();
        if (keys.length != n) {
            return null;
        }
        for (int i = 0; i < n; i++) {
            String k = entries.key(i);
            String v = entries.value(i);
            // Identity first (a builder reused, or constant keys): keeps the inlined code small.
            if ((keys[i] != k || values[i] != v) && !sameContent(keys[i], k, values[i], v)) {
                return null;
            }
        }
        return s;
    }

    private static boolean sameContent(String k1, String k2, String v1, String v2) {
        return k1.equals(k2) && v1.equals(v2);
    }

    /**
     * Returns whether a map that {@link #get} missed recurs: whether its hash is at its door slot,
     * left there by an earlier miss of the same map (or, rarely, of another map with the same full
     * hash, which only admits that one early). Else leaves its hash there for the next miss.
     * A map holding a key declared {@link #uncached} is never admitted and leaves nothing.
     *
     * @param base the installed context (its identity is part of the hash)
     * @param entries the builder's entries
     * @return true when the map was missed before and should be {@link #put} in the table
     */
    public static boolean admit(ContextData base, EntryList entries) {
        if (isUncached(entries)) {
            return false;
        }
        int h = hash(base, entries);
        int door = h & (DOOR_SLOTS - 1);
        if (DOOR[door] == h) {
            return true;
        }
        DOOR[door] = h;
        return false;
    }

    /**
     * Returns an entry for the builder alone: never in the table, never compared by content (only
     * entries in the table are), so no copy of the entries. For a map met the first time, too
     * large to be cached, or holding an {@link #uncached} key.
     *
     * @param base the installed context the entries extended
     * @param result the context built
     * @return the builder's entry
     */
    public static Entry own(ContextData base, ContextData result) {
        return new Entry(base, NO_STRINGS, NO_STRINGS, result);
    }

    /**
     * Remembers that {@code entries} built on {@code base} gives {@code result}, in the table
     * unless the map is too large to be cached or holds an {@link #uncached} key.
     *
     * @param base the installed context the entries extended
     * @param entries the builder's entries (copied when the entry goes into the table)
     * @param result the context built
     * @return the entry, also when it was too large to be cached
     */
    public static Entry put(ContextData base, EntryList entries, ContextData result) {
        if (result.chars() > MAX_CHARS || base.chars() > MAX_CHARS || isUncached(entries)) {
            return own(base, result);
        }
        int n = entries.size();
        Entry e = new Entry(base, Arrays.copyOf(entries.keys(), n),
                Arrays.copyOf(entries.values(), n), result);
        int h = hash(base, entries);
        int i = h & (SLOTS - 1);
        TABLE[i] = e;
        HASHES[i] = h;
        return e;
    }

    /**
     * Declares that a builder's entries holding {@code keyName} never recur in another builder:
     * such maps are neither looked up nor remembered here from now on (each builder still keeps
     * its own last result). One key per facade copy; declaring the same one again is a no-op.
     *
     * @param keyName the key's name
     * @throws IllegalStateException if another key was declared before
     */
    public static synchronized void uncached(String keyName) {
        String declared = uncachedKey;
        if (declared != null && !declared.equals(keyName)) {
            throw new IllegalStateException("jfrctx: maps holding '" + declared
                    + "' are already left out of the shared cache; cannot also leave out '" + keyName + "'");
        }
        uncachedKey = keyName;
    }

    private static boolean isUncached(EntryList entries) {
        String key = uncachedKey;
        return key != null && entries.containsKey(key);
    }
}
