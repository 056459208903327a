package dev.jfrctx.javaagent;

import dev.jfrctx.AutoPropagation;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.lang.instrument.Instrumentation;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.jar.JarFile;

/**
 * {@code -javaagent:jfrctx-agent.jar[=OPTIONS]}: makes the context follow work across the JDK's
 * hand-off points (see {@link Instrumentations}). Steps: put the boot jar (the facade plus
 * {@code dev.jfrctx.AutoPropagation}, nested in this jar) on the bootstrap search path, so that
 * the JDK classes the advice is inlined into can reach it; let {@code java.base} read that jar's
 * (unnamed) module; configure {@code AutoPropagation}; install the transformations.
 */
public final class Premain {

    private static final String BOOT_JAR = "dev/jfrctx/javaagent/jfrctx-boot.jar";
    private static final String SHADED_SAFE = "dev.jfrctx.javaagent.shaded.net.bytebuddy.safe";

    private Premain() {
    }

    private static long T0;

    /**
     * The {@code -javaagent:} entry point.
     *
     * @param args the options after {@code =}, or null
     * @param inst the JVM's instrumentation
     */
    public static void premain(String args, Instrumentation inst) {
        long start = System.nanoTime();
        T0 = start;
        Options options;
        try {
            options = Options.parse(args, System.getProperty("jfrctx.javaagent.exclude"),
                    System.getProperty("jfrctx.javaagent.threads"));
        } catch (IllegalArgumentException e) {
            // As the native agent does with a bad option: one line, and the JVM does not start.
            System.err.println("jfrctx: " + e.getMessage());
            System.exit(1);
            return;
        }
        try {
            install(options, inst);
        } catch (Throwable t) {
            System.err.println("jfrctx: the Java agent could not start, context is not propagated"
                    + " by itself: " + t);
            return;
        }
        if (Boolean.getBoolean("jfrctx.javaagent.verbose")) {
            System.err.printf("jfrctx: Java agent installed in %.1f ms%n",
                    (System.nanoTime() - start) / 1e6);
        }
    }

    /**
     * Attaching to a running JVM is not supported: says so and does nothing.
     *
     * @param args the options, unused
     * @param inst the JVM's instrumentation, unused
     */
    public static void agentmain(String args, Instrumentation inst) {
        System.err.println("jfrctx: the Java agent must be given at start-up (-javaagent:...);"
                + " attaching it to a running JVM is not supported");
    }

    private static void install(Options options, Instrumentation inst) throws Exception {
        // The relocated ByteBuddy's "safe" mode: no sun.misc.Unsafe (the agent injects no class),
        // so JDK 24+ prints no Unsafe deprecation warning on the application's stderr.
        if (System.getProperty(SHADED_SAFE) == null) {
            System.setProperty(SHADED_SAFE, "true");
        }
        if (!inst.isRetransformClassesSupported()) {
            throw new IllegalStateException("this JVM cannot retransform classes");
        }
        inst.appendToBootstrapClassLoaderSearch(new JarFile(extractBootJar()));
        Class<?> helper = Class.forName("dev.jfrctx.AutoPropagation", true, null);
        if (helper.getClassLoader() != null) {
            throw new IllegalStateException("dev.jfrctx.AutoPropagation not on the bootstrap path");
        }
        Module base = Object.class.getModule();
        Module own = Premain.class.getModule();
        // java.base reads the boot jar's module (the advice calls AutoPropagation); the agent
        // reads java.lang's private fields once (the virtual-thread scheduler).
        inst.redefineModule(base, Collections.singleton(helper.getModule()),
                Collections.emptyMap(), Map.of("java.lang", Collections.singleton(own)),
                Collections.emptySet(), Collections.emptyMap());
        AutoPropagation.configure(options.excluded, options.threads);

        if (Boolean.getBoolean("jfrctx.javaagent.verbose")) {
            System.err.printf("jfrctx: boot jar ready at %.1f ms%n", (System.nanoTime() - T0) / 1e6);
        }
        Instrumentations.install(inst);
        // After the transformations: reading them initialises VirtualThread, whose scheduler
        // loads ForkJoinTask, which must be loaded transformed.
        long t = System.nanoTime();
        AutoPropagation.internalExecutors(internalExecutors());
        if (Boolean.getBoolean("jfrctx.javaagent.verbose")) {
            System.err.printf("jfrctx: virtual-thread executors %.1f ms%n", (System.nanoTime() - t) / 1e6);
        }
    }

    /** The executors of {@code java.lang.VirtualThread} (scheduler, unparker): not hand-offs. */
    private static Object[] internalExecutors() {
        List<Object> found = new ArrayList<>();
        Class<?> vt;
        try {
            vt = Class.forName("java.lang.VirtualThread", false, null);
        } catch (ClassNotFoundException e) {
            return new Object[0]; // JDK 17
        }
        for (Field f : vt.getDeclaredFields()) {
            if (!Modifier.isStatic(f.getModifiers())) {
                continue;
            }
            boolean one = Executor.class.isAssignableFrom(f.getType());
            boolean many = f.getType().isArray()
                    && Executor.class.isAssignableFrom(f.getType().getComponentType());
            if (!one && !many) {
                continue;
            }
            try {
                f.setAccessible(true);
                Object v = f.get(null);
                if (v instanceof Object[]) {
                    Collections.addAll(found, (Object[]) v);
                } else if (v != null) {
                    found.add(v);
                }
            } catch (ReflectiveOperationException | RuntimeException e) {
                System.err.println("jfrctx: cannot read VirtualThread." + f.getName()
                        + ": its hand-offs may be propagated: " + e);
            }
        }
        return found.toArray();
    }

    /** Copies the nested boot jar to a temporary file (deleted at exit). */
    private static File extractBootJar() throws IOException {
        File file = File.createTempFile("jfrctx-boot-", ".jar");
        file.deleteOnExit();
        try (InputStream in = Premain.class.getClassLoader().getResourceAsStream(BOOT_JAR)) {
            if (in == null) {
                throw new IOException(BOOT_JAR + " missing from the agent jar");
            }
            Files.copy(in, file.toPath(), StandardCopyOption.REPLACE_EXISTING);
        }
        return file;
    }
}
