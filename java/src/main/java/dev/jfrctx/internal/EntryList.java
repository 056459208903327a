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

    String key(int i) {
        return keys[i];
    }

    String value(int i) {
        return values[i];
    }
}
