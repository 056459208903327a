package dev.jfrctx.javaagent;

import dev.jfrctx.AutoPropagation;
import dev.jfrctx.javaagent.shaded.net.bytebuddy.asm.Advice;

/**
 * The advice the agent inlines into the JDK's hand-off points. Inlined code may only use types the
 * bootstrap class loader sees: {@link AutoPropagation} (on the bootstrap search path) and the
 * JDK's. Every piece suppresses its own exceptions: a failure in jfrctx never breaks a hand-off.
 */
final class Advices {

    private Advices() {
    }

    /** {@code ThreadPoolExecutor.execute(Runnable)}: submit, invokeAll and invokeAny go through it. */
    static final class Execute {
        @Advice.OnMethodEnter(suppress = Throwable.class)
        static void enter(@Advice.This Object executor,
                @Advice.Argument(value = 0, readOnly = false) Runnable task) {
            task = AutoPropagation.execute(executor, task);
        }
    }

    /** {@code ThreadPoolExecutor.addWorker}: the worker thread it starts inherits no context. */
    static final class AddWorker {
        @Advice.OnMethodEnter(suppress = Throwable.class)
        static void enter() {
            AutoPropagation.poolWorkers(1);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
        static void exit() {
            AutoPropagation.poolWorkers(-1);
        }
    }

    /**
     * {@code ScheduledThreadPoolExecutor.delayedExecute(task)} (schedule, scheduleAtFixedRate,
     * scheduleWithFixedDelay, execute, submit), {@code Timer.sched(task, ...)}: the task carries
     * the snapshot in its field.
     */
    static final class CaptureArgument {
        @Advice.OnMethodEnter(suppress = Throwable.class)
        static void enter(@Advice.This Object executor, @Advice.Argument(0) Object task) {
            AutoPropagation.captureInto(executor, task);
        }
    }

    /** {@code ForkJoinPool.WorkQueue.push(task, pool, ...)}: every submission and fork. */
    static final class Push {
        @Advice.OnMethodEnter(suppress = Throwable.class)
        static void enter(@Advice.Argument(0) Object task, @Advice.Argument(1) Object pool) {
            AutoPropagation.captureInto(pool, task);
        }
    }

    /** {@code ForkJoinPool.WorkQueue.lockedPush(task)} (JDK 17's external submissions). */
    static final class LockedPush {
        @Advice.OnMethodEnter(suppress = Throwable.class)
        static void enter(@Advice.Argument(0) Object task) {
            AutoPropagation.captureInto(null, task);
        }
    }

    /** Constructors of {@code FutureTask} and the {@code ForkJoinTask} adapters. */
    static final class Adapted {
        @Advice.OnMethodExit(suppress = Throwable.class)
        static void exit(@Advice.This Object carrier, @Advice.Argument(0) Object task) {
            AutoPropagation.adapted(carrier, task);
        }
    }

    /** {@code FutureTask.run}, {@code runAndReset}, {@code ForkJoinTask.doExec}. */
    static final class RunCarrier {
        @Advice.OnMethodEnter(suppress = Throwable.class)
        static Object enter(@Advice.This Object carrier) {
            return AutoPropagation.begin(carrier);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
        static void exit(@Advice.Enter Object activation) {
            AutoPropagation.end(activation);
        }
    }

    /** {@code run()} of {@code TimerTask} subclasses. */
    static final class RunTimerTask {
        @Advice.OnMethodEnter(suppress = Throwable.class)
        static Object enter(@Advice.This Object task) {
            return AutoPropagation.beginTimerTask(task);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
        static void exit(@Advice.Enter Object activation) {
            AutoPropagation.end(activation);
        }
    }

    /** {@code Thread.start} (and {@code start(ThreadContainer)}, {@code VirtualThread}'s). */
    static final class StartThread {
        @Advice.OnMethodEnter(suppress = Throwable.class)
        static void enter(@Advice.This Thread thread) {
            AutoPropagation.threadStarting(thread);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
        static void exit(@Advice.This Thread thread, @Advice.Thrown Throwable thrown) {
            AutoPropagation.threadStartFailed(thread, thrown);
        }
    }

    /**
     * {@code loadClass} of application class loaders: a facade class comes from the agent's
     * (bootstrap) copy, also in a child-first loader.
     */
    static final class LoadFacadeClass {
        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class, suppress = Throwable.class)
        static Class<?> enter(@Advice.Argument(0) String name) {
            return AutoPropagation.facadeClass(name);
        }

        @Advice.OnMethodExit(suppress = Throwable.class)
        static void exit(@Advice.Enter Class<?> facade,
                @Advice.Return(readOnly = false) Class<?> result) {
            if (facade != null) {
                result = facade;
            }
        }
    }

    /** {@code run()} of {@code Thread} and its subclasses, {@code VirtualThread.run(Runnable)}. */
    static final class RunThread {
        @Advice.OnMethodEnter(suppress = Throwable.class)
        static Object enter(@Advice.This Thread thread) {
            return AutoPropagation.beginThread(thread);
        }

        @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
        static void exit(@Advice.Enter Object activation) {
            AutoPropagation.end(activation);
        }
    }
}
