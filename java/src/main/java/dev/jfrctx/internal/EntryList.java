package dev.jfrctx.internal;

import java.util.Arrays;

/**
 * A small mutable list of distinct {@code (key, value)} pairs kept sorted by key, in which a later
 * {@link #put} for a key replaces the earlier value. Backs {@code RecordingContext.Builder}.
 * <b>Not API</b>; not thread-safe.
 */
public final class EntryList {

    private String[] keys = new String[4];
    private String[] values = new String[4];
    private int size;
    /** {@link #contentHash()}, 0 when not computed since the last change. */
    private int hash;

    /** Creates an empty list. */
    public EntryList() {
    }

    /**
     * Returns the number of distinct keys.
     *
     * @return the size
     */
    public int size() {
        return size;
    }

    /**
     * Returns whether {@code key} is present.
     *
     * @param key the key name
     * @return true when present
     */
    public boolean containsKey(String key) {
        return Arrays.binarySearch(keys, 0, size, key) >= 0;
    }

    /**
     * Sets {@code key} to {@code value}, replacing an earlier value for the same key.
     *
     * @param key the key name, non-null
     * @param value the value, non-null
     */
    public void put(String key, String value) {
        hash = 0;
        int at = Arrays.binarySearch(keys, 0, size, key);
        if (at >= 0) {
            values[at] = value;
            return;
        }
        at = -at - 1;
        if (size == keys.length) {
            keys = Arrays.copyOf(keys, size * 2);
            values = Arrays.copyOf(values, size * 2);
        }
        System.arraycopy(keys, at, keys, at + 1, size - at);
        System.arraycopy(values, at, values, at + 1, size - at);
        keys[at] = key;
        values[at] = value;
        size++;
    }

    /**
     * Returns a hash of the entries (keys and values, in order), cached until the next
     * {@link #put}.
     *
     * @return the hash, never 0
     */
    public int contentHash() {
        int h = hash;
        if (h == 0) {
            h = 1;
            for (int i = 0; i < size; i++) {
                h = 31 * (31 * h + keys[i].hashCode()) + values[i].hashCode();
            }
            if (h == 0) {
                h = 1;
            }
            hash = h;
        }
        return h;
    }

    String[] keys() {
        return keys;
    }

    String[] values() {
        return values;
    }

    String key(int i) {
        return keys[i];
    }

    String value(int i) {
        return values[i];
    }
}
