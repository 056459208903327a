#!/usr/bin/env python3
"""An idle JVM: what each configuration costs while the application does nothing. IdleJvm.java
sleeps; per configuration and round, the CPU each thread group spent over the measured seconds
(/proc/PID/task/*/schedstat, as bench/fresh) and the wake-ups of the jfrctx worker (its voluntary
context switches), after a warm-up that leaves the JVM's start, the agent's and JFR's out.

  bench/idle/run.py [--jdk DIR] [--agent SO] [--base-agent SO] [--seconds S] [--warmup S]
                    [--rounds R] [--period MS]

Configurations, interleaved per round: `none` (no profiling), `jfr` (JFR alone: an in-process
RecordingStream with jdk.ExecutionSample every --period ms), `jfrctx` (the agent, events=cpu at
the same period, sink=jsonl:/dev/null), and `jfrctx-base` with --base-agent (another build of the
agent, e.g. the previous commit's, measured in the same run). Defaults: JDK $JFRCTX_JDK25,
target/release/libjfrctx.so, 20 s measured after 10 s, 2 rounds, 20 ms.
"""
import argparse, importlib.util, os, statistics, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))

def load(name, path):
    """The module at `path` as `name` (every benchmark's script is called run.py)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module

load("run", os.path.join(root, "bench", "server", "run.py"))  # what bench/fresh imports as `run`
fresh = load("fresh_run", os.path.join(root, "bench", "fresh", "run.py"))  # CPU ns per thread group

def wakeups(pid, name="jfrctx-worker"):
    """Voluntary context switches of the thread called `name` (its wake-ups from sleep)."""
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/comm") as f:
                if f.read().strip() != name:
                    continue
            with open(f"/proc/{pid}/task/{t}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        return int(line.split()[1])
        except OSError:
            pass
    return None

def run(java, classes, agent, mode, period, seconds, warmup):
    """CPU ns per thread group over the measured seconds, and the worker's wake-ups."""
    cmd = [java, f"-Dperiod={period}", "-cp", classes]
    if agent:
        cmd.append(f"-agentpath:{agent}=sink=jsonl:/dev/null,events=cpu,period={period}ms")
    cmd += ["IdleJvm", str(warmup + seconds + 5), mode]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if p.stdout.readline().strip() != "idle":
        sys.exit(f"run.py: {cmd} did not start")
    time.sleep(warmup)
    before, w0 = fresh.cpu_by_group(p.pid), wakeups(p.pid)
    time.sleep(seconds)
    after, w1 = fresh.cpu_by_group(p.pid), wakeups(p.pid)
    p.kill()
    p.wait()
    after.subtract(before)
    woke = None if w0 is None or w1 is None else w1 - w0
    return after, woke

def group(name):
    if name.startswith("jfrctx"):
        return "jfrctx"
    if name.startswith("JFR") or name.startswith("Jfr"):
        return "JFR"
    return "JVM"

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jdk", default=os.environ.get("JFRCTX_JDK25"))
    ap.add_argument("--javac-jdk", default=os.environ.get("JFRCTX_JDK17"))
    ap.add_argument("--agent", default=os.path.join(root, "target/release/libjfrctx.so"))
    ap.add_argument("--base-agent", help="another build of the agent, measured as jfrctx-base")
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--period", type=int, default=20)
    a = ap.parse_args()
    if not a.jdk or not a.javac_jdk:
        sys.exit("run.py: set JFRCTX_JDK25 and JFRCTX_JDK17 (source scripts/jdks.sh) "
                 "or pass --jdk/--javac-jdk")
    classes = tempfile.mkdtemp(prefix="jfrctx-idle-")
    subprocess.run([os.path.join(a.javac_jdk, "bin/javac"), "--release", "17", "-d", classes,
                    os.path.join(here, "IdleJvm.java")], check=True)
    java = os.path.join(a.jdk, "bin/java")
    configs = [("none", None, "none"), ("jfr", None, "jfr"), ("jfrctx", a.agent, "none")]
    if a.base_agent:
        configs.append(("jfrctx-base", a.base_agent, "none"))
    total = {c[0]: [] for c in configs}
    print(f"an idle JVM, {a.seconds} s measured after {a.warmup} s; "
          "CPU µs per second by thread group")
    for r in range(a.rounds):
        for label, agent, mode in configs:
            g, woke = run(java, classes, agent, mode, a.period, a.seconds, a.warmup)
            by = {}
            for name, ns in g.items():
                by[group(name)] = by.get(group(name), 0) + ns
            per_s = {k: v / a.seconds / 1000 for k, v in by.items()}
            total[label].append(sum(per_s.values()))
            shown = ", ".join(f"{k} {per_s.get(k, 0):.0f}" for k in ("JVM", "JFR", "jfrctx"))
            own = sorted(((v, k) for k, v in g.items() if group(k) == "jfrctx" and v > 0),
                         reverse=True)
            if own:
                shown += " (" + ", ".join(f"{k} {v / a.seconds / 1000:.0f}" for v, k in own) + ")"
            wk = f", worker wake-ups/s {woke / a.seconds:.0f}" if woke is not None else ""
            print(f"round {r + 1} {label:12s} process {sum(per_s.values()):6.0f}: {shown}{wk}")
    base = statistics.median(total["jfr"])
    for label, _, _ in configs:
        m = statistics.median(total[label])
        print(f"median {label:12s} {m:6.0f} µs/s, ×{m / base:.2f} of JFR alone")

if __name__ == "__main__":
    main()
