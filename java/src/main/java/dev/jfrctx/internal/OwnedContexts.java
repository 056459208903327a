package dev.jfrctx.internal;

/**
 * The private contexts ({@link ContextData#isPrivate}) installed by one thread's open scopes,
 * innermost last, each with the serial number of the scope that built and installed it: when that
 * scope closes (or is discarded by an outer one closing), the context's id is released at once.
 * Confined to the thread; the ring's Cleaner action reads it only after the thread's state has
 * become unreachable, to release what scopes left open when the thread ended. <b>Not API</b>.
 */
final class OwnedContexts {

    private long[] serials;
    private ContextData[] contexts;
    /** Entries in use; read by {@link ThreadState#restore} before calling {@link #closeFrom}. */
    int top;

    /** Remembers that scope {@code serial} installed the private context {@code data}. */
    void push(long serial, ContextData data) {
        if (serials == null) {
            serials = new long[4];
            contexts = new ContextData[4];
        } else if (top == serials.length) {
            serials = java.util.Arrays.copyOf(serials, top * 2);
            contexts = java.util.Arrays.copyOf(contexts, top * 2);
        }
        serials[top] = serial;
        contexts[top] = data;
        top++;
    }

    /** Scope {@code closing} and every scope opened after it are closed: releases their contexts. */
    void closeFrom(long closing) {
        while (top > 0 && serials[top - 1] >= closing) {
            top--;
            ContextData data = contexts[top];
            contexts[top] = null;
            data.releaseIfPrivate();
        }
    }

    /** The thread is gone with scopes still open: releases every context they held. */
    void releaseAll() {
        closeFrom(Long.MIN_VALUE);
    }
}
