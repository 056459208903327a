package dev.jfrctx.javaagent;

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
import dev.jfrctx.javaagent.shaded.net.bytebuddy.utility.JavaModule;
import java.lang.instrument.Instrumentation;
import java.util.Set;

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

    static void install(Instrumentation inst, Set<String> loaded) {
        // 1. The carriers get a field and an interface: possible only when the class is loaded,
        // so their transformation is load-time only, and they are loaded right after it is in
        // place (before step 2, whose retransformations load classes unseen: ByteBuddy holds its
        // circularity lock meanwhile, and the verifier of a retransformed ForkJoinWorkerThread
        // loads ForkJoinTask on JDK 21).
        AgentBuilder carriers = builder();
        carriers = carrier(carriers, loaded, "java.util.concurrent.FutureTask", "run", "runAndReset");
        carriers = carrier(carriers, loaded, "java.util.concurrent.ForkJoinTask", "doExec", "doExec");
        carriers = carrier(carriers, loaded, "java.util.TimerTask", null, null);
        carriers = carriers
                .type(hasSuperClass(named("java.util.TimerTask")).and(not(named("java.util.TimerTask"))))
                .transform((builder, type, loader, module, domain) -> builder
                        .visit(Advice.to(Advices.RunTimerTask.class)
                                .on(named("run").and(takesArguments(0)))))
                .type(named("java.util.concurrent.FutureTask"))
                .transform((builder, type, loader, module, domain) -> builder
                        .visit(Advice.to(Advices.Adapted.class)
                                .on(isConstructor().and(takesArguments(1).or(takesArguments(2))))))
                .type(nameStartsWith("java.util.concurrent.ForkJoinTask$Adapted")
                        .or(named("java.util.concurrent.ForkJoinTask$RunnableExecuteAction")))
                .transform((builder, type, loader, module, domain) -> builder
                        .visit(Advice.to(Advices.Adapted.class)
                                .on(isConstructor().and(not(takesArguments(0))))));
        carriers.installOn(inst);
        for (String name : PRELOAD) {
            try {
                Class.forName(name, false, null);
            } catch (ClassNotFoundException e) {
                // not in this JDK
            }
        }

        // 2. Advice only: retransforms what is loaded already (Thread, its loaded subclasses).
        AgentBuilder b = builder()
                .with(AgentBuilder.RedefinitionStrategy.RETRANSFORMATION)
                // Classes loaded while a retransformation runs (the verifier's) miss the
                // load-time transformation: look for loaded classes again until none is new.
                .with(AgentBuilder.RedefinitionStrategy.DiscoveryStrategy.Reiterating.INSTANCE);
        b.type(named("java.util.concurrent.ThreadPoolExecutor"))
                .transform((builder, type, loader, module, domain) -> builder
                        .visit(Advice.to(Advices.Execute.class)
                                .on(named("execute").and(takesArguments(Runnable.class))))
                        .visit(Advice.to(Advices.AddWorker.class).on(named("addWorker"))))
                .type(named("java.util.concurrent.ScheduledThreadPoolExecutor"))
                .transform((builder, type, loader, module, domain) -> builder
                        .visit(Advice.to(Advices.CaptureArgument.class)
                                .on(named("delayedExecute").and(takesArguments(1)))))
                .type(named("java.util.concurrent.ForkJoinPool$WorkQueue"))
                .transform((builder, type, loader, module, domain) -> builder
                        .visit(Advice.to(Advices.Push.class).on(named("push")
                                .and(takesArgument(0, named("java.util.concurrent.ForkJoinTask")))
                                .and(takesArgument(1, named("java.util.concurrent.ForkJoinPool")))))
                        .visit(Advice.to(Advices.LockedPush.class).on(named("lockedPush")
                                .and(takesArguments(1)))))
                .type(named("java.util.Timer"))
                .transform((builder, type, loader, module, domain) -> builder
                        .visit(Advice.to(Advices.CaptureArgument.class)
                                .on(named("sched").and(takesArgument(0, named("java.util.TimerTask"))))))
                .type(named("java.lang.Thread").or(named("java.lang.VirtualThread")))
                .transform((builder, type, loader, module, domain) -> builder
                        .visit(Advice.to(Advices.StartThread.class)
                                .on(named("start").and(not(isNative())))))
                .type(hasSuperClass(named("java.lang.Thread")))
                .transform((builder, type, loader, module, domain) -> builder
                        .visit(Advice.to(Advices.RunThread.class).on(named("run")
                                .and(takesArguments(0).or(takesArguments(Runnable.class))))))
                .installOn(inst);
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

    private static AgentBuilder builder() {
        return new AgentBuilder.Default(new ByteBuddy().with(TypeValidation.DISABLED))
                .with(AgentBuilder.TypeStrategy.Default.REDEFINE)
                .with(AgentBuilder.InitializationStrategy.NoOp.INSTANCE)
                .with(AgentBuilder.PoolStrategy.Default.FAST)
                .with(new Errors())
                .with(Boolean.getBoolean("jfrctx.javaagent.debug")
                        ? AgentBuilder.Listener.StreamWriting.toSystemError()
                        : AgentBuilder.Listener.NoOp.INSTANCE)
                .ignore(nameStartsWith("dev.jfrctx.").or(isSynthetic()));
    }

    /**
     * {@code type} gets the carrier field and interface, and the activation advice on the
     * methods named {@code run1}/{@code run2} (none when null).
     */
    private static AgentBuilder carrier(AgentBuilder b, Set<String> loaded, String type,
            String run1, String run2) {
        if (loaded.contains(type)) {
            System.err.println("jfrctx: " + type + " was loaded before the Java agent started:"
                    + " its tasks do not carry the context (is another agent loading it?)");
            return b;
        }
        return b.type(named(type)).transform((builder, t, loader, module, domain) -> {
            DynamicType.Builder<?> d = builder
                    .defineField(FIELD, Object.class, Visibility.PRIVATE, FieldPersistence.TRANSIENT,
                            SyntheticState.SYNTHETIC)
                    .implement(AutoPropagation.Carrier.class)
                    .intercept(FieldAccessor.ofField(FIELD));
            if (run1 != null) {
                d = d.visit(Advice.to(Advices.RunCarrier.class)
                        .on(named(run1).or(named(run2)).and(takesArguments(0))));
            }
            return d;
        });
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
