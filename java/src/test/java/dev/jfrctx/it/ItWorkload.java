package dev.jfrctx.it;

import dev.jfrctx.RecordingContext;
import dev.jfrctx.RecordingContextKey;
import java.util.ArrayList;
import java.util.List;

/**
 * The workload the integration tests run in a child JVM with the agent attached: two threads
 * alternate between {@code it_red} under {@code {color: red}}, {@code it_blue} under
 * {@code {color: blue, shade: dark}} and {@code it_none} without a context, for the given number
 * of seconds. Prints one JSON line at the end: {@code {"workload":"ItWorkload","rounds":N}}.
 *
 * <p>{@code ItWorkload misuse}: API misuse with the agent live, then work that shows whether the
 * agent still joins correctly: a context closed twice, closed on another thread (rejected), a
 * builder used again after its context was closed ({@code it_late} under {@code {color: late}}),
 * and a snapshot activated after its context was closed and garbage collected ({@code it_snap}
 * under {@code {color: snap}}). Prints {@code {"workload":"ItWorkload","misuse":"ok",...}}.
 */
public final class ItWorkload {
    static final RecordingContextKey COLOR = RecordingContextKey.forName("color");
    static final RecordingContextKey SHADE = RecordingContextKey.forName("shade");
    /** Not ASCII (two-, three- and four-byte UTF-8): the agent must get it exactly. */
    static final String SHADE_VALUE = "dark bl\u00e5 \u2615 \ud834\udd1e";
    static volatile long sink;

    private ItWorkload() {
    }

    static long it_red(long until) {
        return spin(until, 17);
    }

    static long it_blue(long until) {
        return spin(until, 31);
    }

    static long it_none(long until) {
        return spin(until, 43);
    }

    static long it_late(long until) {
        return spin(until, 59);
    }

    static long it_snap(long until) {
        return spin(until, 61);
    }

    private static void misuse() throws Exception {
        RecordingContext.Builder late = RecordingContext.where(COLOR, "late");
        RecordingContext first = late.build();
        first.close();
        first.close(); // a no-op
        RecordingContext.Snapshot snap;
        try (RecordingContext c = RecordingContext.where(COLOR, "snap").build()) {
            snap = RecordingContext.snapshot();
        }
        RecordingContext mine = RecordingContext.where(COLOR, "mine").build();
        boolean[] rejected = new boolean[1];
        Thread other = new Thread(() -> {
            try {
                mine.close();
            } catch (IllegalStateException expected) {
                rejected[0] = true;
            }
        }, "it-other");
        other.start();
        other.join();
        mine.close();
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(50);
        }
        long x = 0;
        try (RecordingContext again = late.build()) {
            x += it_late(System.nanoTime() + 1_000_000_000L);
        }
        try (RecordingContext.Activation a = snap.activate()) {
            x += it_snap(System.nanoTime() + 1_000_000_000L);
        }
        sink = x;
        System.out.println("{\"workload\":\"ItWorkload\",\"misuse\":\"ok\",\"closeOnOtherThreadRejected\":"
                + rejected[0] + "}");
    }

    private static long spin(long until, long seed) {
        long x = seed;
        do {
            for (int i = 0; i < 100; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        } while (System.nanoTime() < until);
        return x;
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("misuse")) {
            misuse();
            return;
        }
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 3;
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long[] rounds = new long[2];
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 2; t++) {
            final int me = t;
            Thread th = new Thread(() -> {
                long local = 0;
                while (System.nanoTime() < end) {
                    try (RecordingContext red = RecordingContext.where(COLOR, "red").build()) {
                        local += it_red(System.nanoTime() + 2_000_000);
                    }
                    try (RecordingContext blue = RecordingContext.where(COLOR, "blue").where(SHADE, SHADE_VALUE).build()) {
                        local += it_blue(System.nanoTime() + 2_000_000);
                    }
                    local += it_none(System.nanoTime() + 2_000_000);
                    rounds[me]++;
                }
                sink = local;
            }, "it-worker-" + t);
            threads.add(th);
            th.start();
        }
        for (Thread th : threads) {
            th.join();
        }
        System.out.println("{\"workload\":\"ItWorkload\",\"rounds\":" + (rounds[0] + rounds[1]) + "}");
    }
}
