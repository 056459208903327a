package dev.jfrctx;

import dev.jfrctx.internal.ThreadState;

/**
 * The name of one entry of a {@link RecordingContext}, such as {@code "endpoint"} or
 * {@code "request"}.
 *
 * <p>Keys are value objects: two keys with the same name are {@linkplain #equals equal} and
 * interchangeable. Typically a key is created once and kept in a constant:
 * <pre>{@code
 * static final RecordingContextKey ENDPOINT = RecordingContextKey.forName("endpoint");
 * }</pre>
 *
 * <p>Instances are immutable and thread-safe.
 */
public final class RecordingContextKey {

    /** The maximum length of a key name, in {@code char}s. */
    public static final int MAX_NAME_LENGTH = 128;

    private final String name;

    private RecordingContextKey(String name) {
        this.name = name;
    }

    /**
     * Returns the key with the given name.
     *
     * @param name the key name: non-empty, at most {@link #MAX_NAME_LENGTH} chars
     * @return a key equal to every other key of that name (not necessarily the same instance)
     * @throws NullPointerException if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is empty or longer than
     *     {@link #MAX_NAME_LENGTH}
     */
    public static RecordingContextKey forName(String name) {
        return new RecordingContextKey(Checks.keyName(name));
    }

    /**
     * Returns the name of this key.
     *
     * @return the name given to {@link #forName}
     */
    public String name() {
        return name;
    }

    /**
     * Returns whether the context installed on the current thread has an entry for this key.
     * Does not reveal the value.
     *
     * @return true when the current thread's context contains this key; false when it does not
     *     or when no context is installed
     */
    public boolean isBound() {
        return ThreadState.current().context().containsKey(name);
    }

    /**
     * Two keys are equal when their names are equal.
     *
     * @param other the object to compare with
     * @return true when {@code other} is a key with the same name
     */
    @Override
    public boolean equals(Object other) {
        return other == this
                || other instanceof RecordingContextKey && ((RecordingContextKey) other).name.equals(name);
    }

    /**
     * Returns a hash code derived from the name.
     *
     * @return the hash code
     */
    @Override
    public int hashCode() {
        return name.hashCode();
    }

    /**
     * Returns a description for diagnostics, {@code RecordingContextKey[NAME]}.
     *
     * @return the description
     */
    @Override
    public String toString() {
        return "RecordingContextKey[" + name + "]";
    }
}
