package dev.jfrctx.javaagent;

import static dev.jfrctx.javaagent.shaded.net.bytebuddy.matcher.ElementMatchers.failSafe;
import static dev.jfrctx.javaagent.shaded.net.bytebuddy.matcher.ElementMatchers.hasSuperClass;
import static dev.jfrctx.javaagent.shaded.net.bytebuddy.matcher.ElementMatchers.isConstructor;
import static dev.jfrctx.javaagent.shaded.net.bytebuddy.matcher.ElementMatchers.isNative;
import static dev.jfrctx.javaagent.shaded.net.bytebuddy.matcher.ElementMatchers.isSynthetic;
import static dev.jfrctx.javaagent.shaded.net.bytebuddy.matcher.ElementMatchers.nameStartsWith;
import static dev.jfrctx.javaagent.shaded.net.bytebuddy.matcher.ElementMatchers.named;
import static dev.jfrctx.javaagent.shaded.net.bytebuddy.matcher.ElementMatchers.not;
import static dev.jfrctx.javaagent.shaded.net.bytebuddy.matcher.ElementMatchers.takesArgument;
import static dev.jfrctx.javaagent.shaded.net.bytebuddy.matcher.ElementMatchers.takesArguments;

import dev.jfrctx.AutoPropagation;
import dev.jfrctx.javaagent.shaded.net.bytebuddy.ByteBuddy;
import dev.jfrctx.javaagent.shaded.net.bytebuddy.agent.builder.AgentBuilder;
import dev.jfrctx.javaagent.shaded.net.bytebuddy.asm.Advice;
import dev.jfrctx.javaagent.shaded.net.bytebuddy.description.modifier.FieldPersistence;
import dev.jfrctx.javaagent.shaded.net.bytebuddy.description.modifier.SyntheticState;
import dev.jfrctx.javaagent.shaded.net.bytebuddy.description.modifier.Visibility;
import dev.jfrctx.javaagent.shaded.net.bytebuddy.description.type.TypeDescription;
import dev.jfrctx.javaagent.shaded.net.bytebuddy.dynamic.DynamicType;
import dev.jfrctx.javaagent.shaded.net.bytebuddy.dynamic.scaffold.TypeValidation;
import dev.jfrctx.javaagent.shaded.net.bytebuddy.implementation.FieldAccessor;
import dev.jfrctx.javaagent.shaded.net.bytebuddy.pool.TypePool;
import dev.jfrctx.javaagent.shaded.net.bytebuddy.utility.JavaModule;
import java.lang.instrument.Instrumentation;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What the Java agent instruments (ByteBuddy {@link AgentBuilder}, advice inlined, no new classes
 * in the JDK):
 *
 * <table>
 *   <caption>hand-off points</caption>
 *   <tr><th>class</th><th>method</th><th>does</th></tr>
 *   <tr><td>{@code ThreadPoolExecutor}</td><td>{@code execute(Runnable)}</td><td>a
 *       {@code FutureTask} (submit, invokeAll, invokeAny) gets the submitter's snapshot in its
 *       field; another task is wrapped when the submitter has a context</td></tr>
 *   <tr><td></td><td>{@code addWorker}</td><td>the worker thread it starts inherits nothing</td></tr>
 *   <tr><td>{@code ScheduledThreadPoolExecutor}</td><td>{@code delayedExecute}</td><td>every
 *       schedule*, execute, submit: the task's field</td></tr>
 *   <tr><td>{@code FutureTask}</td><td>{@code run}, {@code runAndReset}</td><td>activates the
 *       field's snapshot around the task (each run of a periodic task)</td></tr>
 *   <tr><td>{@code ForkJoinPool.WorkQueue}</td><td>{@code push}, {@code lockedPush}</td><td>every
 *       submission to a {@code ForkJoinPool} and every {@code fork()} (common pool, parallel
 *       streams, {@code CompletableFuture} async stages): the task's field</td></tr>
 *   <tr><td>{@code ForkJoinTask}</td><td>{@code doExec}</td><td>activates it around the task</td></tr>
 *   <tr><td>{@code Timer}</td><td>{@code sched}</td><td>the {@code TimerTask}'s field, activated
 *       in its {@code run()} on the timer thread</td></tr>
 *   <tr><td>{@code Thread}, {@code VirtualThread}</td><td>{@code start}</td><td>the new thread
 *       (also a virtual one, a {@code newVirtualThreadPerTaskExecutor} task, a
 *       {@code StructuredTaskScope} fork) starts with its creator's context; not pool
 *       workers, not the JDK's own thread classes</td></tr>
 * </table>
 *
 * <p>{@code FutureTask}, {@code ForkJoinTask} and {@code TimerTask} get a transient field and
 * implement {@link AutoPropagation.Carrier}: this needs them to be loaded after the agent started
 * (they are, in a plain JVM); one that was loaded earlier is left alone and reported.
 */
final class Instrumentations {

    static final String FIELD = "jfrctx$context";

    private Instrumentations() {
    }

    // Never Instrumentation.getAllLoadedClasses: under -Xcheck:jni, the JDK's own native of it
    // reports "JNI local refs: N, exceeds capacity" (JDK 17, 21, 25).
    static void install(Instrumentation inst) {
        // 1. The carriers get a field and an interface: possible only when the class is loaded,
        // so their transformation is load-time only, and they are loaded right after it is in
        // place (before step 2, whose retransformations load classes unseen: ByteBuddy holds its
        // circularity lock meanwhile, and the verifier of a retransformed ForkJoinWorkerThread
        // loads ForkJoinTask on JDK 21).
        AgentBuilder carriers = builder();
        carriers = carrier(carriers, "java.util.concurrent.FutureTask", "run", "runAndReset");
        carriers = carrier(carriers, "java.util.concurrent.ForkJoinTask", "doExec", "doExec");
        carriers = carrier(carriers, "java.util.TimerTask", null, null);
        carriers = carriers
                .type(failSafe(hasSuperClass(named("java.util.TimerTask")))
                        .and(not(named("java.util.TimerTask"))))
                .transform((builder, type, loader, module, domain) -> builder
                        .visit(RUNTIMERTASK
                                .on(named("run").and(takesArguments(0)))))
                .type(named("java.util.concurrent.FutureTask"))
                .transform((builder, type, loader, module, domain) -> builder
                        .visit(ADAPTED
                                .on(isConstructor().and(takesArguments(1).or(takesArguments(2))))))
                .type(nameStartsWith("java.util.concurrent.ForkJoinTask$Adapted")
                        .or(named("java.util.concurrent.ForkJoinTask$RunnableExecuteAction")))
                .transform((builder, type, loader, module, domain) -> builder
                        .visit(ADAPTED
                                .on(isConstructor().and(not(takesArguments(0))))));
        long t0 = System.nanoTime();
        carriers.installOn(inst);
        long t1 = System.nanoTime();
        for (String name : PRELOAD) {
            Class<?> c = load(name);
            if (c != null && CARRIERS.contains(name) && !AutoPropagation.Carrier.class.isAssignableFrom(c)) {
                // Loaded before the agent (by another agent, say): no field can be added now.
                System.err.println("jfrctx: " + name + " was loaded before the Java agent started:"
                        + " its tasks do not carry the context (give -javaagent:jfrctx-agent.jar"
                        + " before other Java agents)");
            }
        }

        // 2. Advice only. The hand-off classes are loaded first (not initialised), so that the
        // retransformation has an explicit, short list. Thread subclasses loaded before the
        // agent are the JDK's own (their threads inherit nothing); later ones get the advice
        // when they are loaded.
        Set<Class<?>> retransform = new HashSet<>();
        retransform.add(Thread.class);
        for (String name : HAND_OFFS) {
            Class<?> c = load(name);
            if (c != null) {
                retransform.add(c);
            }
        }
        AgentBuilder b = builder()
                .with(AgentBuilder.RedefinitionStrategy.RETRANSFORMATION)
                // One class per retransformation: one that fails does not take the others along,
                // and says so (ByteBuddy's Listener.onError does not see these).
                .with(AgentBuilder.RedefinitionStrategy.BatchAllocator.ForFixedSize.ofSize(1))
                .with(new AgentBuilder.RedefinitionStrategy.DiscoveryStrategy.Explicit(retransform))
                .with(new RetransformErrors());
        b.type(named("java.util.concurrent.ThreadPoolExecutor"))
                .transform((builder, type, loader, module, domain) -> builder
                        .visit(EXECUTE
                                .on(named("execute").and(takesArguments(Runnable.class))))
                        .visit(ADDWORKER.on(named("addWorker"))))
                .type(named("java.util.concurrent.ScheduledThreadPoolExecutor"))
                .transform((builder, type, loader, module, domain) -> builder
                        .visit(CAPTUREARGUMENT
                                .on(named("delayedExecute").and(takesArguments(1)))))
                .type(named("java.util.concurrent.ForkJoinPool$WorkQueue"))
                .transform((builder, type, loader, module, domain) -> builder
                        .visit(PUSH.on(named("push")
                                .and(takesArgument(0, named("java.util.concurrent.ForkJoinTask")))
                                .and(takesArgument(1, named("java.util.concurrent.ForkJoinPool")))))
                        .visit(LOCKEDPUSH.on(named("lockedPush")
                                .and(takesArguments(1)))))
                .type(named("java.util.Timer"))
                .transform((builder, type, loader, module, domain) -> builder
                        .visit(CAPTUREARGUMENT
                                .on(named("sched").and(takesArgument(0, named("java.util.TimerTask"))))))
                .type(named("java.lang.Thread").or(named("java.lang.VirtualThread")))
                .transform((builder, type, loader, module, domain) -> builder
                        .visit(STARTTHREAD
                                .on(named("start").and(not(isNative())))))
                .type(failSafe(hasSuperClass(named("java.lang.ClassLoader")))
                        .and(not(nameStartsWith("java.")))
                        .and(not(nameStartsWith("jdk.")))
                        .and(not(nameStartsWith("sun."))))
                .transform((builder, type, loader, module, domain) -> builder
                        .visit(LOADFACADECLASS.on(named("loadClass")
                                .and(takesArguments(String.class)
                                        .or(takesArguments(String.class, boolean.class))))))
                .type(failSafe(hasSuperClass(named("java.lang.Thread"))))
                .transform((builder, type, loader, module, domain) -> builder
                        .visit(RUNTHREAD.on(named("run")
                                .and(takesArguments(0).or(takesArguments(Runnable.class))))))
                .installOn(inst);
        long t2 = System.nanoTime();
        if (Boolean.getBoolean("jfrctx.javaagent.verbose")) {
            System.err.printf("jfrctx: carriers %.1f ms, hand-offs %.1f ms%n", (t1 - t0) / 1e6, (t2 - t1) / 1e6);
        }
    }

    /** The carriers and their adapters, loaded once their transformation is in place. */
    private static final String[] PRELOAD = {
        "java.util.concurrent.FutureTask",
        "java.util.concurrent.ForkJoinTask",
        "java.util.concurrent.ForkJoinTask$AdaptedRunnable",
        "java.util.concurrent.ForkJoinTask$AdaptedRunnableAction",
        "java.util.concurrent.ForkJoinTask$AdaptedCallable",
        "java.util.concurrent.ForkJoinTask$AdaptedInterruptibleCallable",
        "java.util.concurrent.ForkJoinTask$RunnableExecuteAction",
        "java.util.TimerTask",
    };

    // Each Advice.to reads its class once, not once per transformed type.
    private static final Advice ADAPTED = Advice.to(Advices.Adapted.class);
    private static final Advice ADDWORKER = Advice.to(Advices.AddWorker.class);
    private static final Advice CAPTUREARGUMENT = Advice.to(Advices.CaptureArgument.class);
    private static final Advice EXECUTE = Advice.to(Advices.Execute.class);
    private static final Advice LOADFACADECLASS = Advice.to(Advices.LoadFacadeClass.class);
    private static final Advice LOCKEDPUSH = Advice.to(Advices.LockedPush.class);
    private static final Advice PUSH = Advice.to(Advices.Push.class);
    private static final Advice RUNCARRIER = Advice.to(Advices.RunCarrier.class);
    private static final Advice RUNTHREAD = Advice.to(Advices.RunThread.class);
    private static final Advice RUNTIMERTASK = Advice.to(Advices.RunTimerTask.class);
    private static final Advice STARTTHREAD = Advice.to(Advices.StartThread.class);

    /** The classes whose methods get hand-off advice (loaded before their retransformation). */
    private static final String[] HAND_OFFS = {
        "java.util.concurrent.ThreadPoolExecutor",
        "java.util.concurrent.ScheduledThreadPoolExecutor",
        "java.util.concurrent.ForkJoinPool$WorkQueue",
        "java.util.Timer",
        "java.lang.VirtualThread",
    };
    // Application class loaders (the facade from the agent's copy) are transformed when they
    // are loaded: the JDK's own, loaded before, delegate to the bootstrap loader first anyway.

    /** One type-description cache per class loader, shared by both builders. */
    private static final AgentBuilder.PoolStrategy POOL =
            new AgentBuilder.PoolStrategy.WithTypePoolCache.Simple(
                    TypePool.Default.ReaderMode.FAST, new ConcurrentHashMap<>());

    private static final Set<String> CARRIERS = new HashSet<>(Arrays.asList(
            "java.util.concurrent.FutureTask", "java.util.concurrent.ForkJoinTask",
            "java.util.TimerTask"));

    /** The JDK class {@code name}, loaded (not initialised); null when this JDK has none. */
    private static Class<?> load(String name) {
        try {
            return Class.forName(name, false, null);
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    private static AgentBuilder builder() {
        return new AgentBuilder.Default(new ByteBuddy().with(TypeValidation.DISABLED))
                .with(AgentBuilder.TypeStrategy.Default.REDEFINE)
                .with(AgentBuilder.InitializationStrategy.NoOp.INSTANCE)
                .with(POOL)
                .with(new Errors())
                .with(Boolean.getBoolean("jfrctx.javaagent.debug")
                        ? AgentBuilder.Listener.StreamWriting.toSystemError()
                        : AgentBuilder.Listener.NoOp.INSTANCE)
                // Neither its own classes nor another agent's (OpenTelemetry's, loaded from its
                // own class loader, whose superclasses a type pool cannot always resolve).
                .ignore(nameStartsWith("dev.jfrctx.")
                        .or(nameStartsWith("io.opentelemetry.javaagent."))
                        .or(isSynthetic()));
    }

    /**
     * {@code type} gets the carrier field and interface, and the activation advice on the
     * methods named {@code run1}/{@code run2} (none when null).
     */
    private static AgentBuilder carrier(AgentBuilder b, String type, String run1, String run2) {
        return b.type(named(type)).transform((builder, t, loader, module, domain) -> {
            DynamicType.Builder<?> d = builder
                    .defineField(FIELD, Object.class, Visibility.PRIVATE, FieldPersistence.TRANSIENT,
                            SyntheticState.SYNTHETIC)
                    .implement(AutoPropagation.Carrier.class)
                    .intercept(FieldAccessor.ofField(FIELD));
            if (run1 != null) {
                d = d.visit(RUNCARRIER
                        .on(named(run1).or(named(run2)).and(takesArguments(0))));
            }
            return d;
        });
    }

    /** Reports a class whose retransformation failed (one line each). */
    private static final class RetransformErrors
            extends AgentBuilder.RedefinitionStrategy.Listener.Adapter {
        @Override
        public Iterable<? extends List<Class<?>>> onError(int index, List<Class<?>> batch,
                Throwable throwable, List<Class<?>> types) {
            for (Class<?> c : batch) {
                System.err.println("jfrctx: the Java agent could not instrument " + c.getName()
                        + ": " + throwable);
            }
            return Collections.emptyList();
        }
    }

    /** Reports a class the agent could not transform (one line each). */
    private static final class Errors extends AgentBuilder.Listener.Adapter {
        @Override
        public void onError(String typeName, ClassLoader loader, JavaModule module, boolean loaded,
                Throwable throwable) {
            System.err.println("jfrctx: the Java agent could not instrument " + typeName + ": "
                    + throwable);
        }

        @Override
        public void onTransformation(TypeDescription type, ClassLoader loader, JavaModule module,
                boolean loaded, DynamicType dynamicType) {
            if (Boolean.getBoolean("jfrctx.javaagent.verbose")) {
                System.err.println("jfrctx: instrumented " + type.getName());
            }
        }
    }
}
