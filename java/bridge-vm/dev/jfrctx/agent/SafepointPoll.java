package dev.jfrctx.agent;

import jdk.internal.vm.annotation.DontInline;

/**
 * A safepoint poll where the caller needs one: the return of a method that is never inlined
 * polls (interpreted, C1 and C2 code alike). Compiled on its own by the build (the annotation's
 * package is not exported, which {@code javac --release} refuses); honoured because the bridge
 * classes are defined by the boot loader, which HotSpot lets use the VM's annotations.
 *
 * <p>Why: on JDK 25 JFR dates a sample when it asks for it and walks the stack at the thread's
 * next safepoint poll (JEP 518). A thread's first context that took a spare ring
 * ({@code RingPool.reserve}) would otherwise reach its first transition with no poll since the
 * take, so a sample asked for just before the opening could be walked inside the new context's
 * code with the time before it. The JNI registration it replaces polls on its way back from
 * native code; this poll keeps the spare path's opening as consistent as that one
 * (ARCHITECTURE.md, "Spare rings"). Not API.
 */
public final class SafepointPoll {
    private SafepointPoll() {}

    /** Returns, polling on the way: pending safepoint operations and JFR samples run here. */
    @DontInline
    public static void here() {}
}
