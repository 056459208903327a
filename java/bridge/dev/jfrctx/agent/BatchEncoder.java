package dev.jfrctx.agent;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import jdk.jfr.EventType;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordedThreadGroup;

/**
 * Encodes streamed JFR events into the agent's batch format (see ARCHITECTURE.md, "Batch
 * format"): a direct little-endian buffer of tagged records, strings sent once and then referred
 * to by dense ids. Not thread-safe: the bridge serialises access.
 */
final class BatchEncoder {
    static final byte TAG_STRING = 1;
    static final byte TAG_SAMPLE = 2;
    static final byte TAG_CALIBRATION = 3;
    static final byte TAG_END = 4;
    static final byte TAG_DEFINE = 5;
    static final byte TAG_RELEASE = 6;
    private static final int MAX_FRAMES = 0xFFFF;
    private static final int METHOD_CACHE_LIMIT = 200_000;
    private static final String CARRIER_GROUP = "CarrierThreads";

    private ByteBuffer buf = ByteBuffer.allocateDirect(1 << 20).order(ByteOrder.LITTLE_ENDIAN);
    private final Map<String, Integer> strings = new HashMap<>();
    private final Map<RecordedMethod, Integer> methods = new IdentityHashMap<>();
    private final Map<EventType, TypeInfo> types = new IdentityHashMap<>();
    /** Strings defined before the batch being built: its own definitions have ids from here. */
    private int firstNewString;
    private int batchEvents;
    private final String calibrationName;

    BatchEncoder(String calibrationName) {
        this.calibrationName = calibrationName;
    }

    /** How a given event type is read, decided once per type. */
    private static final class TypeInfo {
        final int nameId;
        final boolean calibration;
        final String threadField;
        final boolean hasDuration;
        final boolean hasWeight;
        /** {@code jdk.CPUTimeSample} (JDK 25+): the CPU-time period the JVM sampled this one at. */
        final boolean hasSamplingPeriod;

        TypeInfo(int nameId, boolean calibration, String threadField, boolean hasDuration, boolean hasWeight,
                boolean hasSamplingPeriod) {
            this.nameId = nameId;
            this.calibration = calibration;
            this.threadField = threadField;
            this.hasDuration = hasDuration;
            this.hasWeight = hasWeight;
            this.hasSamplingPeriod = hasSamplingPeriod;
        }
    }

    int size() {
        return buf.position();
    }

    ByteBuffer buffer() {
        return buf;
    }

    void reset() {
        buf.clear();
        firstNewString = strings.size();
        batchEvents = 0;
    }

    /** Events encoded into the batch being built. */
    int events() {
        return batchEvents;
    }

    /**
     * Drops the batch being built after the agent did not take it, and forgets the strings it
     * defined (the agent never saw them), so that the next batch defines them again.
     */
    void discard() {
        for (java.util.Iterator<Integer> it = strings.values().iterator(); it.hasNext();) {
            if (it.next() >= firstNewString) {
                it.remove();
            }
        }
        for (java.util.Iterator<Integer> it = methods.values().iterator(); it.hasNext();) {
            if (it.next() >= firstNewString) {
                it.remove();
            }
        }
        for (java.util.Iterator<TypeInfo> it = types.values().iterator(); it.hasNext();) {
            if (it.next().nameId >= firstNewString) {
                it.remove();
            }
        }
        reset();
    }

    private void ensure(int more) {
        if (buf.remaining() < more) {
            int cap = Math.max(buf.capacity() * 2, buf.position() + more + 1024);
            ByteBuffer next = ByteBuffer.allocateDirect(cap).order(ByteOrder.LITTLE_ENDIAN);
            buf.flip();
            next.put(buf);
            buf = next;
        }
    }

    private int string(String s) {
        if (s == null) {
            s = "";
        }
        Integer id = strings.get(s);
        if (id != null) {
            return id;
        }
        int next = strings.size();
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        ensure(9 + bytes.length);
        buf.put(TAG_STRING).putInt(next).putInt(bytes.length).put(bytes);
        strings.put(s, next);
        return next;
    }

    private int method(RecordedMethod m) {
        Integer id = methods.get(m);
        if (id != null) {
            return id;
        }
        String name = m.getType().getName() + "." + m.getName();
        int sid = string(name);
        if (methods.size() >= METHOD_CACHE_LIMIT) {
            methods.clear();
        }
        methods.put(m, sid);
        return sid;
    }

    private TypeInfo type(RecordedEvent e) {
        EventType t = e.getEventType();
        TypeInfo info = types.get(t);
        if (info == null) {
            String threadField = t.getField("sampledThread") != null ? "sampledThread" : "eventThread";
            info = new TypeInfo(string(t.getName()), t.getName().equals(calibrationName), threadField,
                    t.getField("duration") != null, t.getField("weight") != null,
                    t.getField("samplingPeriod") != null);
            types.put(t, info);
        }
        return info;
    }

    /**
     * Encodes one event: a calibration bracket or a sample. A sample's weight is {@code period}
     * when positive (the real sampling period of a {@code jdk.ExecutionSample} or
     * {@code jdk.NativeMethodSample}, in ns), else its {@code samplingPeriod} in ns
     * ({@code jdk.CPUTimeSample}), else its {@code weight} field, else 0.
     */
    void add(RecordedEvent e, long period) {
        batchEvents++;
        TypeInfo info = type(e);
        if (info.calibration) {
            ensure(25);
            buf.put(TAG_CALIBRATION).putLong(e.getLong("startTime")).putLong(e.getLong("before"))
                    .putLong(e.getLong("after"));
            return;
        }
        RecordedThread thread = e.getValue(info.threadField);
        long tid = -1;
        int nameId = string("");
        int flags = 0;
        if (thread != null) {
            tid = thread.getJavaThreadId();
            String name = thread.getJavaName();
            nameId = string(name != null ? name : thread.getOSName());
            if (thread.hasField("virtual") && thread.getBoolean("virtual")) {
                flags |= 1;
                ThreadCheckpoints.arm();
            } else if (isCarrier(thread)) {
                flags |= 4;
            }
        }
        if (thread == null) {
            ThreadCheckpoints.arm();
        }
        RecordedStackTrace st = e.getStackTrace();
        List<RecordedFrame> frames = st != null ? st.getFrames() : List.of();
        if (st != null && st.isTruncated()) {
            flags |= 2;
        }
        int n = Math.min(frames.size(), MAX_FRAMES);
        int[] ids = new int[n];
        for (int i = 0; i < n; i++) {
            RecordedMethod m = frames.get(i).getMethod();
            ids[i] = m != null ? method(m) : string("(unknown)");
        }
        int eventId = info.nameId;
        long start = e.getLong("startTime");
        long duration = info.hasDuration ? e.getLong("duration") : 0L;
        long weight = period > 0 ? period
                : info.hasSamplingPeriod ? e.getDuration("samplingPeriod").toNanos()
                : info.hasWeight ? e.getLong("weight") : 0L;
        ensure(1 + 4 + 8 + 8 + 8 + 4 + 1 + 8 + 2 + 8 * n);
        buf.put(TAG_SAMPLE).putInt(eventId).putLong(start).putLong(duration).putLong(tid).putInt(nameId)
                .put((byte) flags).putLong(weight).putShort((short) n);
        for (int i = 0; i < n; i++) {
            buf.putInt(ids[i]).putInt(frames.get(i).getLineNumber());
        }
    }

    /**
     * A carrier of the JDK's virtual-thread scheduler: its platform threads
     * ({@code jdk.internal.misc.CarrierThread}) are in the thread group {@code CarrierThreads}.
     */
    private static boolean isCarrier(RecordedThread thread) {
        RecordedThreadGroup group = thread.getThreadGroup();
        return group != null && CARRIER_GROUP.equals(group.getName());
    }

    /**
     * Appends every context definition and release logged in {@link Definitions}, oldest first:
     * tag 5 = id (i64), then the map's wire form (entry count u16, per key and value a byte length
     * u32 and UTF-8); tag 6 = id (i64). The log holds them in this form already. Keys and values
     * inline, not in the string table, which lives as long as the agent.
     */
    void addDefinitions() {
        Definitions.drain(definitionSink);
    }

    private final DefinitionLog.Sink definitionSink = (data, offset, length) -> {
        ensure(length);
        buf.put(data, offset, length);
    };

    void end(String message) {
        int id = string(message);
        ensure(5);
        buf.put(TAG_END).putInt(id);
    }
}
