#!/usr/bin/env python3
"""A fresh thread's first context: FreshThreads.java starts threads at a steady rate, each
activating a snapshot once and closing it. Two figures:

- the task's wall time, read with System.nanoTime() on the thread itself (median and 90th
  percentile over the measured threads): the request side of a first context, directly;
- CPU per thread by thread group, from /proc/PID/task/*/schedstat before and after the measured
  seconds (the scheduler's run time in ns; /proc's stat, in 10 ms ticks, where the kernel has no
  schedstat): what the agent's own threads spend on it as well;
- the JVM's resident memory (VmRSS) at the end of the measured seconds.

  bench/fresh/run.py [--jdk DIR] [--agent SO] [--jar JAR] [--rate N] [--seconds S] [--warmup S]
                    [--rounds R] [--kind virtual|platform] [--options OPTS]
                    [--context snapshot|new]

Runs, per round: `nothing` and `context` with the agent (sink=jsonl:/dev/null plus --options,
none by default: the agent's defaults, a spare ring per fresh thread; --options spares=off for a
JNI registration), `context` without it. The agent's request-side cost of a first context is the
task's wall time with the agent minus without it; its whole cost is `context` minus `nothing` on
the request threads (the ForkJoinPool carriers; a platform thread's CPU is gone from /proc once it
has ended, so --kind platform shows the wall time and the agent's threads only) plus the agent's
own threads. Defaults: JDK $JFRCTX_JDK25, target/release/libjfrctx.so, target/jfrctx.jar, virtual
threads, 20 000 threads/s, 10 s measured after 5 s of warm-up, 2 rounds.
"""
import argparse, collections, os, re, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
sys.path.insert(0, os.path.join(root, "bench", "server"))
import run as server  # noqa: E402  (bench/server/run.py: its /proc reader)

# A heap touched in advance: a run of a few seconds allocates less than G1's first eden, so
# without it every allocated byte lands on a page touched for the first time and each thread pays
# a page fault per 4 KiB it allocates (≈ 0.2 per thread with the agent), which a server whose
# heap has cycled does not pay. The same heap in every configuration.
HEAP = ["-Xms512m", "-Xmx512m", "-XX:+AlwaysPreTouch"]

def run_ns(task):
    """The task's CPU time in ns from its schedstat (first field), None without one."""
    try:
        with open(f"{task}/schedstat") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None

def cpu_by_group(pid):
    """CPU ns per thread name (numbers stripped): schedstat's ns, else the server benchmark's
    /proc stat ticks (10 ms: at 2 000 threads/s for 10 s, a tick is 500 ns a thread)."""
    groups = collections.Counter()
    for t in os.listdir(f"/proc/{pid}/task"):
        task = f"/proc/{pid}/task/{t}"
        st = server.stat_ticks(f"{task}/stat")
        if st:
            ns = run_ns(task)
            groups[re.sub(r"[-#]?\d+$", "", st[0])] += ns if ns is not None else st[1] * 1e9 / server.TICK
    return groups

def rss_mib(pid):
    """The process's resident memory in MiB (VmRSS), None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None

def run(java, classes, jar, agent, options, mode, rate, seconds, warmup, kind="virtual"):
    """Threads started in the measured seconds, the CPU each group spent in them (after the
    warm-up: the start of the JVM, the agent and the JIT's first compilations left out), and the
    task's wall time (p50, p90) in ns."""
    cmd = [java, *HEAP, "-Dhold=3000", f"-Dwarmup={warmup}", "-cp", f"{jar}:{classes}"]
    if agent:
        cmd.append(f"-agentpath:{agent}=sink=jsonl:/dev/null" + (f",{options}" if options else ""))
    cmd += ["FreshThreads", str(seconds), mode, str(rate), kind]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    before = collections.Counter()
    line = p.stdout.readline()
    if line.strip() == "warm":
        time.sleep(1.0)
        before = cpu_by_group(p.pid)
        line = p.stdout.readline()
    if not line.startswith("threads "):
        sys.exit(f"run.py: unexpected output {line!r}: {p.stderr.read()}")
    fields = line.split()
    n, wall = int(fields[1]), (int(fields[3]), int(fields[4]))
    time.sleep(1.0)
    groups = cpu_by_group(p.pid)
    rss = rss_mib(p.pid)
    p.wait()
    groups.subtract(before)
    return n, groups, wall, rss

def common_args(ap, rate, seconds, warmup, seconds_help):
    """The options this script and profile.py share, with their defaults."""
    ap.add_argument("--jdk", default=os.environ.get("JFRCTX_JDK25"))
    ap.add_argument("--javac-jdk", default=os.environ.get("JFRCTX_JDK17"))
    ap.add_argument("--agent", default=os.path.join(root, "target/release/libjfrctx.so"))
    ap.add_argument("--jar", default=os.path.join(root, "target/jfrctx.jar"))
    ap.add_argument("--rate", type=int, default=rate)
    ap.add_argument("--seconds", type=int, default=seconds, help=seconds_help)
    ap.add_argument("--warmup", type=int, default=warmup, help="seconds run first and left out (0: none)")
    ap.add_argument("--kind", choices=("virtual", "platform"), default="virtual",
                    help="fresh virtual threads (JDK 21+; the carriers are ForkJoinPool-*) or "
                    "platform threads")
    ap.add_argument("--options", default="",
                    help="agent options added to sink=jsonl:/dev/null (e.g. spares=off)")
    ap.add_argument("--context", choices=("snapshot", "new"), default="snapshot",
                    help="each thread activates a snapshot built once, or builds a never-seen "
                    "{endpoint, request=<counter>} (FreshThreads' modes context and new)")

def context_mode(a):
    """FreshThreads' mode for --context."""
    return "context" if a.context == "snapshot" else "new"

def compile_fresh(a, tool):
    """FreshThreads.java compiled against the facade jar: the classes' directory."""
    if not a.jdk or not a.javac_jdk:
        sys.exit(f"{tool}: set JFRCTX_JDK25 and JFRCTX_JDK17 (source scripts/jdks.sh) or pass "
                 "--jdk/--javac-jdk")
    classes = tempfile.mkdtemp(prefix="jfrctx-fresh-")
    subprocess.run([os.path.join(a.javac_jdk, "bin/javac"), "--release", "17", "-cp", a.jar,
                    "-d", classes, os.path.join(here, "FreshThreads.java")], check=True)
    return classes

def main():
    ap = argparse.ArgumentParser()
    common_args(ap, 20000, 10, 5, "seconds measured")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    classes = compile_fresh(a, "run.py")
    java = os.path.join(a.jdk, "bin/java")
    print(f"{a.rate} fresh {a.kind} threads/s for {a.seconds} s after {a.warmup} s of warm-up; "
          "CPU ns per thread by thread group")
    for r in range(a.rounds):
        mode = context_mode(a)
        for label, agent, mode in (("agent, nothing", a.agent, "nothing"), ("agent, context", a.agent, mode),
                                   ("no agent, context", None, mode)):
            n, g, wall, rss = run(java, classes, a.jar, agent, a.options, mode, a.rate, a.seconds,
                                  a.warmup, a.kind)
            shown = ", ".join(f"{k} {v / n:.0f}" for k, v in g.most_common()
                              if k.startswith(("ForkJoinPool", "jfrctx")) and v > 0)
            mem = f", RSS {rss:.0f} MiB" if rss is not None else ""
            print(f"round {r + 1} {label:18s} threads {n}, task wall ns p50 {wall[0]} "
                  f"p90 {wall[1]}{mem}: {shown}")

if __name__ == "__main__":
    main()
