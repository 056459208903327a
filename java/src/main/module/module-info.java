/**
 * The jfrctx facade: the draft JEP's thread recording context API ({@link dev.jfrctx}).
 *
 * <p>{@code dev.jfrctx.internal} is not exported: no other module uses it. The Java agent's
 * {@code dev.jfrctx.AutoPropagation} is compiled with the facade into the agent's own boot jar, and
 * the OpenTelemetry bridge, which carries its own copy of the facade as class-path code, uses the
 * exported API and one internal declaration ({@code ContextCache.uncached}). {@code jdk.jfr} is
 * needed only by {@code RecordingContextFilter}'s {@code EventType} overloads, hence
 * {@code requires static}: a run-time image without {@code jdk.jfr} runs the rest of the facade.
 * Those overloads are public API, hence also {@code transitive}: a module that reads
 * {@code dev.jfrctx} reads {@code jdk.jfr} whenever it is present.
 *
 * <p>This file lives apart from the sources ({@code java/src/main/module}) so that everything
 * compiling {@code java/src/main/java} as class-path code (Gradle 4.4, which predates module
 * support, the test harness, the Java agent's boot jar, the benchmarks) stays as it is;
 * {@code scripts/build.sh} compiles it with the sources into {@code target/jfrctx.jar}. On the class
 * path the jar is an unnamed-module jar as before: the JVM ignores its {@code module-info.class}.
 */
module dev.jfrctx {
    requires static transitive jdk.jfr;

    exports dev.jfrctx;
}
