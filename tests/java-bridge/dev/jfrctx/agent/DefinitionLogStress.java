package dev.jfrctx.agent;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Writers define and release maps through {@link Definitions} while one reader drains the log as
 * the stream does, then checks what the agent would receive (tests/it/definition_log.rs):
 * <ul>
 * <li>in time: every id whose {@code define} returned before a drain started is in that drain or
 *     an earlier one (a sample carrying it can only be taken after {@code define} returned);</li>
 * <li>whole: every definition once, with its exact keys and values (ASCII, non-ASCII, long
 *     values and one map larger than a chunk), every release once, after its definition;</li>
 * <li>in order per writer, and nothing else in the log (no padding or abandoned record leaks);</li>
 * <li>nothing left open: one more thread defines maps at the bottom of its stack, so that a
 *     {@code StackOverflowError} strikes inside {@code define} at many points (each failed
 *     attempt is retried one frame higher); the maps whose {@code define} returned arrive like
 *     the others, the failed ones never, and no reservation stays pending at the end;</li>
 * <li>dense: ids from {@code FIRST_ID} on, few skipped (the agent keeps them in a window);</li>
 * <li>nothing poisoned: that thread's first map, non-ASCII, is the JVM's first record and first
 *     UTF-8 encoding, at the end of its stack, before any writer starts; a class whose
 *     initialization failed there would fail every writer's non-ASCII map.</li>
 * </ul>
 * Prints one JSON line with the counts; exits 1 with the first problem otherwise.
 *
 * <p>Args: writers, maps per writer.
 */
public final class DefinitionLogStress {
    private static final String BIG = "v".repeat(DefinitionLog.CHUNK + 1000);

    static String[] map(int writer, int i) {
        String value = i % 7 == 3 ? "é-" + writer + "-" + i + "-ü"
                : i % 997 == 5 ? "x".repeat(200_000) + i
                : writer == 0 && i == 1234 ? BIG
                : "w" + writer + "-" + i;
        return new String[] {"endpoint", "/e" + (i % 5), "request", value};
    }

    /** Maps the overflowing thread defines; its ids, and how many attempts failed. */
    static final int DEEP = 100;
    static final long[] deepIds = new long[DEEP];
    static int deepFailures;

    static String[] deepMap(int i) {
        return new String[] {"deep", "d" + i + (i % 5 == 0 ? "-ß" : "")};
    }

    static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Recurses to the stack's end, then defines, one frame higher after each overflow. */
    static long deep(String[] kv) {
        try {
            return deep(kv);
        } catch (StackOverflowError e) {
            deepFailures++;
            return Definitions.define(kv);
        }
    }

    public static void main(String[] args) throws Exception {
        // As StreamBridge.start does before the application runs; the writers wait for the
        // "deep" thread's first map (see "nothing poisoned" above).
        Definitions.initialize();
        CountDownLatch firstDeep = new CountDownLatch(1);
        int writers = Integer.parseInt(args[0]);
        int maps = Integer.parseInt(args[1]);
        AtomicLongArray lastDefined = new AtomicLongArray(writers);
        long[][] ids = new long[writers][maps];
        Thread[] threads = new Thread[writers];
        for (int w = 0; w < writers; w++) {
            int writer = w;
            threads[w] = new Thread(() -> {
                awaitQuietly(firstDeep);
                for (int i = 0; i < maps; i++) {
                    long id = Definitions.define(map(writer, i));
                    ids[writer][i] = id;
                    lastDefined.set(writer, id);
                    if (i % 3 != 0) {
                        Definitions.release(id);
                    }
                }
            });
        }
        Thread deeper = new Thread(() -> {
            try {
                for (int i = 0; i < DEEP; i++) {
                    deepIds[i] = deep(deepMap(i));
                    firstDeep.countDown();
                }
            } finally {
                firstDeep.countDown(); // also when define threw: the writers must not wait forever
            }
        }, "deep");
        Map<Long, String[]> defined = new HashMap<>();
        List<Long> order = new ArrayList<>();
        Map<Long, Integer> releases = new HashMap<>();
        int[] drains = {0};
        String[] problem = {null};
        DefinitionLog.Sink sink = (data, offset, length) -> {
            ByteBuffer b = ByteBuffer.wrap(data, offset, length).order(ByteOrder.LITTLE_ENDIAN);
            byte tag = b.get();
            long id = b.getLong();
            if (tag == BatchEncoder.TAG_RELEASE && length == 9) {
                releases.merge(id, 1, Integer::sum);
                if (!defined.containsKey(id) && problem[0] == null) {
                    problem[0] = "release of " + id + " before its definition";
                }
                return;
            }
            if (tag != BatchEncoder.TAG_DEFINE) {
                problem[0] = "a record with tag " + tag + " and length " + length;
                return;
            }
            int n = 2 * (b.getShort() & 0xFFFF);
            String[] kv = new String[n];
            for (int k = 0; k < n; k++) {
                byte[] s = new byte[b.getInt()];
                b.get(s);
                kv[k] = new String(s, StandardCharsets.UTF_8);
            }
            if (b.hasRemaining() && problem[0] == null) {
                problem[0] = "definition " + id + " has " + b.remaining() + " bytes too many";
            }
            if (defined.put(id, kv) != null && problem[0] == null) {
                problem[0] = "definition " + id + " twice";
            }
            order.add(id);
        };
        for (Thread t : threads) {
            t.start();
        }
        deeper.start();
        boolean running = true;
        while (running) {
            running = deeper.isAlive();
            for (Thread t : threads) {
                running |= t.isAlive();
            }
            long[] before = new long[writers];
            for (int w = 0; w < writers; w++) {
                before[w] = lastDefined.get(w);
            }
            Definitions.drain(sink);
            drains[0]++;
            for (int w = 0; w < writers; w++) {
                if (before[w] != 0 && !defined.containsKey(before[w]) && problem[0] == null) {
                    problem[0] = "id " + before[w] + " was defined before drain " + drains[0]
                            + " started but is not in it";
                }
            }
            if (problem[0] != null) {
                break;
            }
        }
        Definitions.drain(sink);
        if (problem[0] == null) {
            problem[0] = check(writers, maps, ids, defined, order, releases);
        }
        for (int i = 0; i < DEEP && problem[0] == null; i++) {
            if (!java.util.Arrays.equals(deepMap(i), defined.get(deepIds[i]))) {
                problem[0] = "the map defined at the stack's end " + i + " did not arrive intact";
            }
        }
        if (problem[0] == null && DefinitionLog.pendingRanges() != 0) {
            problem[0] = DefinitionLog.pendingRanges() + " ranges still pending after every writer ended:"
                    + " a failed define left its reservation open";
        }
        if (problem[0] == null && defined.size() != writers * maps + DEEP) {
            problem[0] = defined.size() + " definitions, expected " + (writers * maps + DEEP)
                    + ": a failed define reached the reader";
        }
        // Dense: ids are numbered by the log's reservations, which skip only those that found a
        // chunk full (a few per chunk) or whose writer failed (the deep thread's overflows).
        long first = defined.keySet().stream().mapToLong(Long::longValue).min().orElse(0);
        long last = defined.keySet().stream().mapToLong(Long::longValue).max().orElse(0);
        long unused = last - Definitions.FIRST_ID + 1 - defined.size();
        if (problem[0] == null && first < Definitions.FIRST_ID) {
            problem[0] = "id " + first + " is below the first, " + Definitions.FIRST_ID;
        }
        if (problem[0] == null && unused > deepFailures + defined.size() / 100) {
            problem[0] = unused + " ids unused up to " + last + " ("
                    + deepFailures + " failed defines): the ids are not dense";
        }
        if (problem[0] != null) {
            System.out.println("FAIL " + problem[0]);
            System.exit(1);
        }
        System.out.println("{\"definitions\":" + defined.size() + ",\"releases\":" + releases.size()
                + ",\"drains\":" + drains[0] + ",\"passed_over\":" + DefinitionLog.passedOver()
                + ",\"overflowed_defines\":" + deepFailures + ",\"unused_ids\":" + unused + "}");
    }

    static String check(int writers, int maps, long[][] ids, Map<Long, String[]> defined, List<Long> order,
            Map<Long, Integer> releases) {
        Map<Long, Integer> position = new HashMap<>();
        for (int i = 0; i < order.size(); i++) {
            position.put(order.get(i), i);
        }
        for (int w = 0; w < writers; w++) {
            for (int i = 0; i < maps; i++) {
                long id = ids[w][i];
                String[] want = map(w, i);
                String[] got = defined.get(id);
                if (!java.util.Arrays.equals(want, got)) {
                    return "id " + id + " (writer " + w + ", map " + i + ") arrived as "
                            + (got == null ? "nothing" : got.length + " strings, first value "
                            + got[1] + ", request of length " + got[3].length());
                }
                int released = releases.getOrDefault(id, 0);
                if (released != (i % 3 != 0 ? 1 : 0)) {
                    return "id " + id + " released " + released + " times";
                }
                if (i > 0 && position.get(ids[w][i - 1]) > position.get(id)) {
                    return "writer " + w + ": map " + i + " arrived before map " + (i - 1);
                }
            }
        }
        return null;
    }
}
