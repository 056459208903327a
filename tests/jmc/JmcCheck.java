import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.openjdk.jmc.common.IMCFrame;
import org.openjdk.jmc.common.IMCStackTrace;
import org.openjdk.jmc.common.IMCThread;
import org.openjdk.jmc.common.item.IAccessorKey;
import org.openjdk.jmc.common.item.IItem;
import org.openjdk.jmc.common.item.IItemCollection;
import org.openjdk.jmc.common.item.IItemIterable;
import org.openjdk.jmc.common.item.IMemberAccessor;
import org.openjdk.jmc.common.item.IType;
import org.openjdk.jmc.common.unit.IQuantity;
import org.openjdk.jmc.common.unit.StructContentType;
import org.openjdk.jmc.common.unit.UnitLookup;
import org.openjdk.jmc.flightrecorder.JfrLoaderToolkit;

/**
 * Reads a JFR file with JDK Mission Control's parser (org.openjdk.jmc:flightrecorder) and prints
 * one JSON object per event: {"event", "time_ns" (epoch), "thread" (Java id or null), "context"
 * (the jfrctx.Context value as JMC gives it: a string, or for a struct its non-null fields as an
 * object; null when the event has no context), "unknown"
 * (contextUnknown), "stack" (["pkg.Class.method:line", ...], leaf first)}. Run by
 * tests/it/jfr_file.rs, which compares them with the JSON lines of the same run.
 */
public final class JmcCheck {
    public static void main(String[] args) throws Exception {
        IItemCollection items = JfrLoaderToolkit.loadEvents(new File(args[0]));
        StringBuilder out = new StringBuilder();
        for (IItemIterable iterable : items) {
            IType<IItem> type = iterable.getType();
            IMemberAccessor<?, IItem> time = accessor(type, "startTime");
            IMemberAccessor<?, IItem> thread = accessor(type, "eventThread");
            IMemberAccessor<?, IItem> stack = accessor(type, "stackTrace");
            IAccessorKey<?> contextKey = key(type, "context");
            IMemberAccessor<?, IItem> context = accessor(type, "context");
            IMemberAccessor<?, IItem> unknown = accessor(type, "contextUnknown");
            for (IItem item : iterable) {
                out.append("{\"event\":").append(json(type.getIdentifier()));
                IQuantity t = (IQuantity) time.getMember(item);
                out.append(",\"time_ns\":").append(t.clampedLongValueIn(UnitLookup.EPOCH_NS));
                IMCThread th = thread == null ? null : (IMCThread) thread.getMember(item);
                out.append(",\"thread\":").append(th == null ? "null" : String.valueOf(th.getThreadId()));
                out.append(",\"context\":");
                Object ctx = context == null ? null : context.getMember(item);
                if (ctx == null) {
                    out.append("null");
                } else if (ctx instanceof String) {
                    out.append(json((String) ctx));
                } else {
                    out.append(contextJson(contextKey, ctx));
                }
                Object reason = unknown == null ? null : unknown.getMember(item);
                out.append(",\"unknown\":").append(reason == null ? "null" : json(reason.toString()));
                out.append(",\"stack\":[");
                IMCStackTrace st = stack == null ? null : (IMCStackTrace) stack.getMember(item);
                if (st != null) {
                    List<String> frames = new ArrayList<>();
                    for (IMCFrame f : st.getFrames()) {
                        frames.add(json(f.getMethod().getType().getFullName() + "."
                                + f.getMethod().getMethodName() + ":" + f.getFrameLineNumber()));
                    }
                    out.append(String.join(",", frames));
                }
                out.append("]}\n");
            }
        }
        System.out.print(out);
    }

    @SuppressWarnings("unchecked")
    private static String contextJson(IAccessorKey<?> key, Object struct) {
        StructContentType<Object> ct = (StructContentType<Object>) key.getContentType();
        Map<String, String> entries = new TreeMap<>();
        for (IAccessorKey<?> field : ct.getAccessorKeys().keySet()) {
            Object v = ct.getAccessor(field).getMember(struct);
            if (v != null) {
                entries.put(field.getIdentifier(), v.toString());
            }
        }
        StringBuilder sb = new StringBuilder("{");
        for (Map.Entry<String, String> e : entries.entrySet()) {
            if (sb.length() > 1) {
                sb.append(',');
            }
            sb.append(json(e.getKey())).append(':').append(json(e.getValue()));
        }
        return sb.append('}').toString();
    }

    private static IAccessorKey<?> key(IType<IItem> type, String id) {
        for (IAccessorKey<?> k : type.getAccessorKeys().keySet()) {
            if (k.getIdentifier().equals(id)) {
                return k;
            }
        }
        return null;
    }

    private static IMemberAccessor<?, IItem> accessor(IType<IItem> type, String id) {
        IAccessorKey<?> k = key(type, id);
        return k == null ? null : type.getAccessor(k);
    }

    private static String json(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
            case '"': sb.append("\\\""); break;
            case '\\': sb.append("\\\\"); break;
            default:
                if (c < 0x20) {
                    sb.append(String.format("\\u%04x", (int) c));
                } else {
                    sb.append(c);
                }
            }
        }
        return sb.append('"').toString();
    }
}
