package fr;

/**
 * A hot loop ({@code outer}) around a small method the JIT inlines ({@code inner}) that does
 * nearly all the work. With non-safepoint debug information most CPU samples end in
 * {@code inner}; without it HotSpot credits them to the nearest safepoint, in {@code outer}.
 *
 * <p>Usage: {@code java fr.Inlining SECONDS}.
 */
public final class Inlining {
    static volatile long SINK;

    static long inner(long a, long b) {
        a ^= b * 0x9E3779B97F4A7C15L;
        b += Long.rotateLeft(a, 17) ^ 0xBF58476D1CE4E5B9L;
        a *= b | 1;
        b ^= a >>> 31;
        a += Long.rotateLeft(b, 29) * 0x94D049BB133111EBL;
        return a ^ b;
    }

    static long outer(long until) {
        long s = until;
        do {
            for (int i = 0; i < 4096; i++) {
                s = inner(s, i);
            }
        } while (System.nanoTime() < until);
        return s;
    }

    public static void main(String[] args) {
        long until = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000_000L;
        SINK = outer(until);
    }
}
