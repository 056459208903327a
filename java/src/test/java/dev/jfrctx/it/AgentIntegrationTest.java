package dev.jfrctx.it;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * JVMs started with the agent attached (see {@link AgentRun}): the workload's samples carry the
 * contexts their methods ran in, the agent's exit summary adds up and matches the file, and a bad
 * option stops the JVM with one {@code jfrctx:} line.
 */
public class AgentIntegrationTest {

    private static AgentRun run;
    private static List<Map<String, Object>> samples;

    @BeforeClass
    public static void runTheWorkload() throws Exception {
        Path jsonl = AgentRun.outDir().resolve("it-samples.jsonl");
        Files.deleteIfExists(jsonl);
        run = AgentRun.run("sink=jsonl:" + jsonl + ",period=10ms", "3");
        samples = new ArrayList<>();
        if (Files.exists(jsonl)) {
            for (String line : Files.readAllLines(jsonl, StandardCharsets.UTF_8)) {
                samples.add(MiniJson.object(line)); // every line must parse
            }
        }
    }

    /** The innermost {@code it_*} method of a sample's stack, or null. */
    @SuppressWarnings("unchecked")
    private static String itMethod(Map<String, Object> sample) {
        for (Object f : (List<Object>) sample.get("stack")) {
            String m = (String) ((Map<String, Object>) f).get("method");
            String prefix = ItWorkload.class.getName() + ".it_";
            if (m != null && m.startsWith(prefix)) {
                return m.substring(ItWorkload.class.getName().length() + 1);
            }
        }
        return null;
    }

    private static Map<String, Object> expected(String method) {
        Map<String, Object> m = new LinkedHashMap<>();
        if (method.equals("it_red")) {
            m.put("color", "red");
        } else if (method.equals("it_blue")) {
            m.put("color", "blue");
            m.put("shade", ItWorkload.SHADE_VALUE);
        }
        return m;
    }

    @Test
    public void theWorkloadRanToItsEnd() {
        assertEquals(run.dump(), 0, run.exitCode);
        assertTrue(run.dump(), run.stdout.contains("\"workload\":\"ItWorkload\""));
    }

    @Test
    public void samplesCarryTheContextOfTheirMethod() {
        Map<String, Integer> correct = new LinkedHashMap<>();
        int unknown = 0;
        List<String> wrong = new ArrayList<>();
        for (Map<String, Object> s : samples) {
            String method = itMethod(s);
            if (method == null) {
                continue;
            }
            Object context = s.get("context");
            if (context == null) {
                assertTrue("context null without a reason: " + s, s.get("unknown") instanceof String);
                unknown++;
            } else if (context.equals(expected(method))) {
                correct.merge(method, 1, Integer::sum);
            } else {
                wrong.add(method + ": " + s);
            }
        }
        assertTrue("wrong contexts: " + wrong, wrong.isEmpty());
        int total = correct.values().stream().mapToInt(Integer::intValue).sum();
        assertTrue("too few samples in it_* methods: " + correct + ", unknown " + unknown + "\n" + run.dump(),
                total >= 30);
        for (String m : new String[] {"it_red", "it_blue", "it_none"}) {
            assertTrue("no correct sample in " + m + ": " + correct, correct.getOrDefault(m, 0) > 0);
        }
        assertTrue("more unknown than correct: " + unknown + " vs " + total, unknown <= total);
    }

    @Test
    public void theSummaryAddsUpAndMatchesTheFile() {
        AgentRun.Summary s = run.summary();
        assertEquals(s.line, s.received, s.withContext + s.withoutContext + s.unknown + s.dropped);
        assertEquals(s.line, samples.size(), s.received);
        assertTrue(s.line, s.withContext > 0);
        assertEquals("only the summary from the agent\n" + run.dump(), 1, run.agentLines().size());
    }

    @Test
    public void aBadOptionStopsTheJvmWithOneLine() throws Exception {
        AgentRun bad = AgentRun.run("ring=1000", "1");
        assertFalse(bad.dump(), bad.exitCode == 0);
        assertFalse("the workload ran\n" + bad.dump(), bad.stdout.contains("\"workload\""));
        List<String> lines = bad.agentLines();
        assertEquals(bad.dump(), 1, lines.size());
        assertTrue(lines.get(0), lines.get(0).contains("ring") && lines.get(0).contains("1000"));
    }

    @Test
    public void misuseWithTheAgentLiveKeepsContextsRight() throws Exception {
        Path jsonl = AgentRun.outDir().resolve("it-misuse.jsonl");
        Files.deleteIfExists(jsonl);
        AgentRun misuse = AgentRun.run("sink=jsonl:" + jsonl + ",period=10ms", "misuse");
        assertEquals(misuse.dump(), 0, misuse.exitCode);
        assertTrue(misuse.dump(), misuse.stdout.contains("\"misuse\":\"ok\",\"closeOnOtherThreadRejected\":true"));
        assertEquals("only the summary from the agent\n" + misuse.dump(), 1, misuse.agentLines().size());
        Map<String, Integer> correct = new LinkedHashMap<>();
        List<String> lines = Files.readAllLines(jsonl, StandardCharsets.UTF_8);
        for (String line : lines) {
            Map<String, Object> s = MiniJson.object(line);
            String method = itMethod(s);
            if (method == null || s.get("context") == null) {
                continue;
            }
            Map<String, Object> want = new LinkedHashMap<>();
            want.put("color", method.substring("it_".length()));
            assertEquals("wrong context in " + method + ": " + line, want, s.get("context"));
            correct.merge(method, 1, Integer::sum);
        }
        assertEquals(misuse.summary().line, lines.size(), misuse.summary().received);
        for (String m : new String[] {"it_late", "it_snap"}) {
            assertTrue("no correct sample in " + m + ": " + correct + "\n" + misuse.dump(),
                    correct.getOrDefault(m, 0) > 0);
        }
    }

    @Test
    public void theTinyJsonParserIsStrict() {
        Map<String, Object> o = MiniJson.object("{\"a\":[1,-2.5e3,true,null,\"x\\u00e9\\n\"],\"b\":{}}");
        assertEquals(5, ((List<?>) o.get("a")).size());
        assertEquals(1L, ((List<?>) o.get("a")).get(0));
        assertNull(((List<?>) o.get("a")).get(3));
        assertEquals("x\u00e9\n", ((List<?>) o.get("a")).get(4));
        for (String bad : new String[] {"{", "{\"a\":1,}", "[1 2]", "{\"a\":1} x", "\"\u0001\"", "{\"a\":1,\"a\":2}"}) {
            try {
                MiniJson.parse(bad);
                throw new AssertionError("accepted " + bad);
            } catch (IllegalArgumentException expectedFailure) {
                // good
            }
        }
    }
}
