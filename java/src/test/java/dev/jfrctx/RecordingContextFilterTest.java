package dev.jfrctx;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.function.Consumer;
import jdk.jfr.EventType;
import jdk.jfr.FlightRecorder;
import org.junit.Test;

/** The filter builder's text form and semantics, without the agent. */
public class RecordingContextFilterTest {
    private static final RecordingContextKey TENANT = RecordingContextKey.forName("tenant");
    private static final RecordingContextKey ODD = RecordingContextKey.forName("a;b c");

    private static RecordingContextFilter.Builder create() {
        return RecordingContextFilter.Config.createFilter();
    }

    @Test
    public void eachPredicate() {
        assertEquals("*:has_context", create().forAllTypes().hasContext().build().toString());
        assertEquals("*:has_no_context", create().forAllTypes().hasNoContext().build().toString());
        assertEquals("*:has_key(tenant)", create().forAllTypes().hasKey(TENANT).build().toString());
        assertEquals("*:has_entry(tenant=acme)",
                create().forAllTypes().hasEntry(TENANT, "acme").build().toString());
    }

    @Test
    public void predicatesOfOneRuleAreAndedAndPerTypeRulesFollowTheAllTypesRule() {
        RecordingContextFilter f = create()
                .forType("jdk.ExecutionSample").hasKey(TENANT).hasEntry(TENANT, "acme")
                .forAllTypes().hasContext()
                .build();
        assertEquals("*:has_context;jdk.ExecutionSample:has_key(tenant)+has_entry(tenant=acme)",
                f.toString());
    }

    @Test
    public void resetLetsEverythingOfTheTypePass() {
        RecordingContextFilter f = create().forAllTypes().hasContext()
                .forType("jdk.ExecutionSample", "jdk.CPUTimeSample").hasNoContext().reset().build();
        assertEquals("*:has_context;jdk.ExecutionSample:any;jdk.CPUTimeSample:any", f.toString());
    }

    @Test
    public void forTypeAgainContinuesTheSameRule() {
        RecordingContextFilter.Builder b = create();
        b.forType("jdk.A").hasContext();
        b.forType("jdk.A").hasKey(TENANT).hasContext();
        assertEquals("jdk.A:has_context+has_key(tenant)", b.build().toString());
        assertEquals("", create().build().toString());
    }

    @Test
    public void eventTypeOverload() {
        EventType exec = null;
        for (EventType t : FlightRecorder.getFlightRecorder().getEventTypes()) {
            if (t.getName().equals("jdk.ExecutionSample")) {
                exec = t;
            }
        }
        assertTrue(exec != null);
        assertEquals("jdk.ExecutionSample:has_context",
                create().forType(exec).hasContext().build().toString());
    }

    @Test
    public void keysAndValuesArePercentEncoded() {
        assertEquals("*:has_entry(a%3Bb%20c=x%2Cy%3D%25%C3%A9)",
                create().forAllTypes().hasEntry(ODD, "x,y=%é").build().toString());
    }

    @Test
    public void badArgumentsThrowOneLineMessages() {
        expect(IllegalArgumentException.class, () -> create().forType("a:b"));
        expect(IllegalArgumentException.class, () -> create().forType("*"));
        expect(IllegalArgumentException.class, () -> create().forType(""));
        expect(NullPointerException.class, () -> create().forType((String) null));
        expect(NullPointerException.class, () -> create().forAllTypes().hasKey(null));
        expect(IllegalArgumentException.class, () -> create().forAllTypes().hasEntry(TENANT, ""));
        expect(NullPointerException.class, () -> create().forAllTypes().hasEntry(TENANT, null));
    }

    @Test
    public void configRemembersTheFilterWithoutAgent() {
        RecordingContextFilter f = create().forAllTypes().hasContext().build();
        RecordingContextFilter.Config.setContextFilter(f);
        assertSame(f, RecordingContextFilter.Config.contextFilter());
        assertEquals(f, create().forAllTypes().hasContext().build());
        RecordingContextFilter.Config.setContextFilter(null);
        assertNull(RecordingContextFilter.Config.contextFilter());
    }

    @Test
    public void listenersAreAcceptedWithoutAgent() {
        Consumer<ContextualSample> l = s -> { };
        Samples.addListener(l);
        Samples.addListener(l);
        assertTrue(Samples.removeListener(l));
        assertTrue(!Samples.removeListener(l));
    }

    private static void expect(Class<? extends Throwable> type, Runnable r) {
        try {
            r.run();
        } catch (Throwable t) {
            assertTrue(t.toString(), type.isInstance(t));
            assertTrue(t.getMessage(), t.getMessage().startsWith("jfrctx: ")
                    && !t.getMessage().contains("\n"));
            return;
        }
        fail("expected " + type.getSimpleName());
    }
}
