package dev.jfrctx.it;

import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Runs {@link ItWorkload} in a child JVM with the agent attached. build.gradle passes, as system
 * properties: {@code jfrctx.agent} (the agent library, built by cargo before the tests),
 * {@code jfrctx.java} (the java executable), {@code jfrctx.facadeJar} (the facade jar),
 * {@code jfrctx.testClasses} (these classes) and {@code jfrctx.itOut} (a directory for outputs).
 * Every child runs with {@code -Xcheck:jni}.
 */
final class AgentRun {
    final int exitCode;
    final String stdout;
    final String stderr;
    final String command;

    private AgentRun(int exitCode, String stdout, String stderr, String command) {
        this.exitCode = exitCode;
        this.stdout = stdout;
        this.stderr = stderr;
        this.command = command;
    }

    static String property(String name) {
        String v = System.getProperty(name);
        assertTrue("system property " + name + " is not set (run the tests through Gradle: cd java && "
                + "gradle test)", v != null && !v.isEmpty());
        return v;
    }

    static Path outDir() throws IOException {
        Path dir = Paths.get(property("jfrctx.itOut"));
        Files.createDirectories(dir);
        return dir;
    }

    /** Runs the workload for {@code seconds} with the agent options {@code options}. */
    static AgentRun run(String options, String seconds) throws Exception {
        String agent = property("jfrctx.agent");
        assertTrue("the agent " + agent + " was not built", new File(agent).isFile());
        List<String> cmd = new ArrayList<>(Arrays.asList(property("jfrctx.java"), "-Xcheck:jni",
                "-agentpath:" + agent + "=" + options, "-cp",
                property("jfrctx.facadeJar") + File.pathSeparator + property("jfrctx.testClasses"),
                ItWorkload.class.getName(), seconds));
        Path dir = outDir();
        Path out = Files.createTempFile(dir, "stdout", ".txt");
        Path err = Files.createTempFile(dir, "stderr", ".txt");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile());
        pb.environment().remove("JAVA_TOOL_OPTIONS");
        pb.environment().remove("JDK_JAVA_OPTIONS");
        pb.environment().remove("_JAVA_OPTIONS");
        Process p = pb.start();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor();
            throw new AssertionError("timed out: " + String.join(" ", cmd));
        }
        AgentRun run = new AgentRun(p.exitValue(), read(out), read(err), String.join(" ", cmd));
        Files.delete(out);
        Files.delete(err);
        for (String stream : new String[] {run.stdout, run.stderr}) {
            for (String line : stream.split("\n")) {
                if (line.startsWith("WARNING in native method:") || line.startsWith("WARNING: JNI ")
                        || line.startsWith("FATAL ERROR in native method:")) {
                    throw new AssertionError("-Xcheck:jni: " + line + "\n" + run.dump());
                }
            }
        }
        return run;
    }

    private static String read(Path p) throws IOException {
        return new String(Files.readAllBytes(p), StandardCharsets.UTF_8);
    }

    String dump() {
        return command + "\nexit " + exitCode + "\n--- stdout\n" + stdout + "--- stderr\n" + stderr;
    }

    /** The stderr lines the agent wrote (prefix {@code jfrctx:}). */
    List<String> agentLines() {
        List<String> lines = new ArrayList<>();
        for (String l : stderr.split("\n")) {
            if (l.startsWith("jfrctx:")) {
                lines.add(l);
            }
        }
        return lines;
    }

    /** The agent's exit summary, parsed. */
    static final class Summary {
        final String line;
        final long received;
        final long withContext;
        final long withoutContext;
        final long unknown;
        final long dropped;

        Summary(String line) {
            this.line = line;
            received = field(line, "received");
            withContext = field(line, "with_context");
            withoutContext = field(line, "without_context");
            unknown = field(line, "unknown");
            dropped = field(line, "dropped");
        }

        private static long field(String line, String key) {
            Matcher m = Pattern.compile("(?:^| )" + key + "=(\\d+)").matcher(line);
            assertTrue("no " + key + "= in " + line, m.find());
            return Long.parseLong(m.group(1));
        }
    }

    /** The one {@code jfrctx: samples ...} line. */
    Summary summary() {
        Summary found = null;
        for (String l : agentLines()) {
            if (l.startsWith("jfrctx: samples ")) {
                assertTrue("two summary lines\n" + dump(), found == null);
                found = new Summary(l);
            }
        }
        assertTrue("no summary line\n" + dump(), found != null);
        return found;
    }
}
