package dev.jfrctx.internal;

import java.util.concurrent.atomic.AtomicReference;

/**
 * A lock-free multi-producer collection of context ids whose facade objects became unreachable,
 * drained in one step by the next {@code intern} call. <b>Not API</b>.
 */
final class ReleasedIds {

    private static final class Node {
        final long id;
        final Node next;
        final int size;

        Node(long id, Node next) {
            this.id = id;
            this.next = next;
            this.size = next == null ? 1 : next.size + 1;
        }
    }

    private final AtomicReference<Node> top = new AtomicReference<>();

    /**
     * Adds an id; safe from any thread, including a Cleaner's.
     *
     * @param id the released id
     */
    void add(long id) {
        Node seen;
        do {
            seen = top.get();
        } while (!top.compareAndSet(seen, new Node(id, seen)));
    }

    /**
     * Removes and returns every id added so far.
     *
     * @return the ids (in no particular order), or null when there are none
     */
    long[] drain() {
        if (top.get() == null) {
            return null;
        }
        Node node = top.getAndSet(null);
        if (node == null) {
            return null;
        }
        long[] ids = new long[node.size];
        for (int i = 0; node != null; node = node.next) {
            ids[i++] = node.id;
        }
        return ids;
    }
}
