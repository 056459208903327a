package dev.jfrctx.internal;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.Test;

/**
 * Runs {@link AgentModeMain} in a child JVM (same {@code java.home}) with the fake
 * {@code dev.jfrctx.agent.Natives} on its boot class path, as the agent would define it, and the
 * agent's real {@code RingWriter} (compiled here from {@code java/bridge}): once with
 * {@code jdk.internal.misc} exported to it, as the agent does (transitions go through the ring
 * writer), once without (the facade falls back to its buffer view). The child must succeed and
 * print nothing on stderr (no JVM warnings either).
 */
public class AgentModeTest {

    @Test
    public void liveAgentPathWithTheRingWriter() throws Exception {
        run(true, AgentModeMain.class);
    }

    @Test
    public void liveAgentPathThroughTheBufferView() throws Exception {
        run(false, AgentModeMain.class);
    }

    /** With the agent's {@code RingPool} too: first contexts take spare rings. */
    @Test
    public void spareRingsWithTheRingWriter() throws Exception {
        run(true, SpareRingsMain.class);
    }

    private static void run(boolean ringWriter, Class<?> main) throws Exception {
        Path boot = Files.createTempDirectory("jfrctx-fake-agent");
        Path natives = boot.resolve("dev/jfrctx/agent/Natives.class");
        Files.createDirectories(natives.getParent());
        try (InputStream in = AgentModeTest.class.getResourceAsStream("/dev/jfrctx/agent/Natives.class")) {
            Files.copy(in, natives);
        }
        List<String> javacArgs = new ArrayList<>(List.of("--release", "17", "-d", boot.toString(),
                Paths.get("bridge", "dev", "jfrctx", "agent", "RingWriter.java").toAbsolutePath().toString()));
        List<Path> compiled = new ArrayList<>(List.of(boot.resolve("dev/jfrctx/agent/RingWriter.class")));
        javax.tools.JavaCompiler javac = javax.tools.ToolProvider.getSystemJavaCompiler();
        if (main == SpareRingsMain.class) {
            // RingPool's poll uses the VM's @DontInline: compiled as build.rs compiles it.
            List<String> vmArgs = List.of("--source", "17", "--target", "17", "-Xlint:-options",
                    "--add-exports", "java.base/jdk.internal.vm.annotation=ALL-UNNAMED", "-d", boot.toString(),
                    Paths.get("bridge-vm", "dev", "jfrctx", "agent", "SafepointPoll.java").toAbsolutePath().toString());
            assertEquals("javac " + vmArgs, 0, javac.run(null, null, null, vmArgs.toArray(new String[0])));
            compiled.add(boot.resolve("dev/jfrctx/agent/SafepointPoll.class"));
            // RingPool calls Natives.spareQueue: compiled against the fake, which is on the path.
            javacArgs.addAll(List.of("-cp", boot.toString(),
                    Paths.get("bridge", "dev", "jfrctx", "agent", "RingPool.java").toAbsolutePath().toString()));
            for (String c : new String[] {"RingPool", "RingPool$Mark"}) {
                compiled.add(boot.resolve("dev/jfrctx/agent/" + c + ".class"));
            }
        }
        assertEquals("javac " + javacArgs, 0, javac.run(null, null, null, javacArgs.toArray(new String[0])));
        String classPath = location(AgentLink.class) + File.pathSeparator + location(AgentModeMain.class);
        List<String> command = new ArrayList<>();
        command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-Xshare:off"); // CDS would warn about the appended boot class path
        if (ringWriter) {
            command.add("--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED");
        }
        command.add("-Djfrctx.test.ringWriter=" + ringWriter);
        command.add("-Xbootclasspath/a:" + boot);
        command.add("-cp");
        command.add(classPath);
        command.add(main.getName());
        Path out = boot.resolve("stdout.txt");
        Path err = boot.resolve("stderr.txt");
        Process child = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        assertTrue("child JVM timed out", child.waitFor(120, TimeUnit.SECONDS));
        String stdout = new String(Files.readAllBytes(out), StandardCharsets.UTF_8);
        String stderr = new String(Files.readAllBytes(err), StandardCharsets.UTF_8);
        String report = String.join(" ", command) + "\n--- stdout\n" + stdout + "--- stderr\n" + stderr;
        assertEquals(report, 0, child.exitValue());
        assertEquals(report, "agent-mode OK", stdout.trim());
        assertEquals(report, "", stderr);
        for (Path p : compiled) {
            assertTrue("compiled " + p, Files.exists(p));
        }
        try (java.util.stream.Stream<Path> all = Files.walk(boot)) {
            for (Path p : (Iterable<Path>) all.sorted(java.util.Comparator.reverseOrder())::iterator) {
                Files.delete(p);
            }
        }
    }

    private static String location(Class<?> type) throws Exception {
        return Paths.get(type.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    }
}
