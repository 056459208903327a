#!/usr/bin/env python3
"""Server benchmark harness: embedded Tomcat 10.1 + per-request context filter under a closed-loop
load, one fresh JVM per (configuration, round), configurations interleaved round by round.

    python3 bench/server/run.py --classes DIR --tomcat DIR --agent libjfrctx.so --jar jfrctx.jar \
        --out DIR [--rounds 3] [--warmup 10] [--measure 20] [--connections 8] \
        [--setups "17:platform 21:virtual"] [--configs none,jfr,...] [--pyroscope-jar JAR] \
        [--jvm-opt OPT ...] [--time-contexts] [--phase-ms 2000]

Normally run by scripts/bench.sh (which builds, compiles and fetches what this needs). Writes
server.jsonl (one line per run), server-<cfg>-<setup>-r<N>.{out,err} and server-summary.txt;
prints the summary. Exit status 1 when a run fails to start or serves nothing (a missed target
or a noisy ratio is reported, not a failure). Standard library only.
"""

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

PATHS = "/app/cpu,/app/alloc,/app/handoff,/app/lock,/app/mixed"
PERIOD_MS = 10  # execution samples, every profiler (--period)
ALL_EVENTS = "cpu+alloc+lock+park+io"

# name -> (profiler, filter, description)
CONFIGS = {
    "none": ("none", "off", "no profiling"),
    "jfr": ("jfr", "off", "JFR alone: in-process RecordingStream, jdk.ExecutionSample at the same period"),
    "jfr-exact": ("jfr", "off", "JFR alone with the exact frames jfrctx turns on (-XX:+DebugNonSafepoints)"),
    "jfr-all": ("jfr", "off", "JFR alone with the events and settings of jfrctx's events=" + ALL_EVENTS),
    "jfr-snapshot": ("jfr", "snapshot", "JFR alone, the filter activates a snapshot (no agent: the facade is a no-op)"),
    "jfr-request": ("jfr", "request", "JFR alone, the filter builds {endpoint, request} (no agent: a no-op)"),
    "jfrctx-off": ("jfrctx", "off", "jfrctx loaded (events=cpu), the filter installs nothing"),
    "jfrctx-snapshot": ("jfrctx", "snapshot", "jfrctx, a snapshot per endpoint activated"),
    "jfrctx-endpoint": ("jfrctx", "endpoint", "jfrctx, a new context {endpoint} per request"),
    "jfrctx-request": ("jfrctx", "request", "jfrctx, a new context {endpoint, request} per request, events=cpu"),
    "jfrctx-request-all": ("jfrctx-all", "request", "jfrctx, {endpoint, request}, events=" + ALL_EVENTS),
    "jfrctx-request-jni": ("jfrctx", "request", "as jfrctx-request with spares=off (a JNI registration per first context)"),
    "jfrctx-request-noexact": ("jfrctx", "request",
                               "as jfrctx-request with -XX:-DebugNonSafepoints (exact frames off)"),
    "otel": ("otel", "off", "OpenTelemetry Java agent alone (spans made, exporter none)"),
    "otel-jfr": ("otel-jfr", "off", "OTel agent + JFR alone (the 'jfr' stream): what sampling costs beside OTel"),
    "otel-jfr-exact": ("otel-jfr", "off", "as otel-jfr with the exact frames jfrctx turns on (-XX:+DebugNonSafepoints)"),
    "otel-jfrctx-off": ("otel-jfrctx-off", "off", "OTel agent + jfrctx (events=cpu), no bridge"),
    "otel-jfrctx": ("otel-jfrctx", "off", "OTel agent + jfrctx + jfrctx-otel.jar: trace/span/endpoint per sample"),
    "otel-jfrctx-root": ("otel-jfrctx-root", "off", "as otel-jfrctx with otel.jfrctx.span=root (one context per request)"),
    "otel-jfrctx-noids": ("otel-jfrctx-noids", "off",
                          "as otel-jfrctx with otel.jfrctx.span=none (route and method only: maps recur)"),
    "otel-jfrctx-jni": ("otel-jfrctx", "off", "as otel-jfrctx with spares=off (a JNI registration per first context)"),
    "pyroscope-off": ("pyroscope", "off", "Pyroscope agent (itimer at the same period), no labels"),
    "pyroscope-endpoint": ("pyroscope", "pyroscope-endpoint", "Pyroscope agent, ScopedContext {endpoint}"),
    "pyroscope-request": ("pyroscope", "pyroscope-request", "Pyroscope agent, ScopedContext {endpoint, request}"),
    # Two filter modes A/B alternating in phases of one JVM (Phases.java): B's cost over A's,
    # without the JVM-to-JVM spread. jfr-ab is the method's control (the facade is a no-op).
    "jfr-ab": ("jfr", "off/request", "JFR alone; phases off / {endpoint, request} (facade a no-op): control"),
    "jfrctx-ab": ("jfrctx", "off/request", "jfrctx (events=cpu); phases off / {endpoint, request}"),
    "pyroscope-ab": ("pyroscope", "off/pyroscope-request",
                     "Pyroscope agent; phases off / ScopedContext {endpoint, request}"),
}

# Profilers that run the benchmark's own JFR stream (no agent): JFR alone, beside OTel or not.
JFR_STREAM = ("jfr", "otel-jfr")
# Agent options added to the common ones, by configuration.
AGENT_EXTRA = {"jfrctx-request-jni": ",spares=off", "otel-jfrctx-jni": ",spares=off"}
# JVM options added to the common ones, by configuration: the jfrctx agent enables non-safepoint
# debug information (exact frames) through JVMTI; these baselines turn on the same flag directly,
# and jfrctx-request-noexact turns it off as a service that opts out of exact frames would.
EXACT_FRAMES = ["-XX:+UnlockDiagnosticVMOptions", "-XX:+DebugNonSafepoints"]
NO_EXACT_FRAMES = ["-XX:+UnlockDiagnosticVMOptions", "-XX:-DebugNonSafepoints"]
JVM_EXTRA = {"jfr-exact": EXACT_FRAMES, "otel-jfr-exact": EXACT_FRAMES,
             "jfrctx-request-noexact": NO_EXACT_FRAMES}
# The base a configuration's ratios are paired with, when the run has it (else 'jfr', or 'otel'
# for otel-*): jfrctx with every event against JFR alone recording the same events.
BASE = {"jfrctx-request-all": "jfr-all"}

GROUPS = [  # (group, comm prefixes); /proc comm is the thread name cut to 15 bytes
    ("request", ("req-", "ForkJoinPool-")),
    ("handoff", ("handoff-",)),
    ("jit", ("C1 CompilerThre", "C2 CompilerThre")),
    ("gc", ("GC Thread", "G1 ")),
    ("vm", ("VM Thread",)),
    ("jfr", ("JFR ",)),
    ("jfrctx", ("jfrctx-",)),
    ("tomcat_io", ("http-nio-",)),
    ("refs", ("Reference Handl", "Cleaner-", "Common-Cleaner", "Finalizer")),
    ("pyroscope", ("Pyroscope", "pyroscope", "async-profiler")),
]
TICK = os.sysconf("SC_CLK_TCK")
# The groups the A/B phases read per phase (ThreadGroups.java), from the table above.
PHASE_GROUPS = (
    "jfrctx", "jfr", "request", "gc", "handoff", "refs", "jit", "tomcat_io", "pyroscope")
PHASE_GROUPS_ARG = ";".join(f"{g}={'|'.join(p)}" for g, p in GROUPS if g in PHASE_GROUPS)


def group_of(comm):
    for g, prefixes in GROUPS:
        if comm.startswith(prefixes):
            return g
    return "other"


def stat_ticks(path):
    """(comm, utime + stime) of a /proc stat file; None when the task is gone."""
    try:
        with open(path) as f:
            s = f.read()
    except OSError:
        return None
    comm = s[s.index("(") + 1:s.rindex(")")]
    fields = s[s.rindex(")") + 2:].split()
    return comm, int(fields[11]) + int(fields[12])


def snapshot(pid):
    tasks = {}
    base = f"/proc/{pid}/task"
    for tid in os.listdir(base):
        st = stat_ticks(f"{base}/{tid}/stat")
        if st:
            tasks[tid] = st
    proc = stat_ticks(f"/proc/{pid}/stat")
    return {"time": time.monotonic(), "proc": proc[1] if proc else 0, "tasks": tasks}


def cpu_delta(a, b):
    groups = {g: 0 for g, _ in GROUPS}
    groups["other"] = 0
    for tid, (comm, ticks) in b["tasks"].items():
        before = a["tasks"].get(tid, (comm, 0))[1]
        groups[group_of(comm)] += ticks - before
    total = b["proc"] - a["proc"]
    groups["other"] += total - sum(groups.values())  # threads that ended, rounding
    return total / TICK, {g: v / TICK for g, v in groups.items()}


def http_get(port, path, timeout=10):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        return r.read().decode()


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def read_line(stream, pattern, deadline):
    """Next line of stream matching pattern before deadline (a thread reads; None on timeout/EOF)."""
    box = []

    def reader():
        for line in stream:
            if re.search(pattern, line):
                box.append(line)
                return
        box.append(None)

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    t.join(max(0.0, deadline - time.monotonic()))
    return box[0] if box else None


def count_samples(args, profiler, files, stats0, stats1):
    """Execution samples taken inside the window, or None when this profiler's are not visible."""
    if profiler in JFR_STREAM:
        lo, hi = stats0["epoch_ns"], stats1["epoch_ns"]
        with open(files["samples"]) as f:
            return sum(1 for line in f if line.strip() and lo <= int(line) <= hi)
    if profiler.startswith("jfrctx") or profiler.startswith("otel-jfrctx"):
        lo, hi = stats0["nano"], stats1["nano"]
        n = 0
        with open(files["jsonl"]) as f:
            for line in f:
                if '"jdk.ExecutionSample"' not in line:
                    continue
                m = re.search(r'"time_ns":(-?\d+)', line)
                if m and lo <= int(m.group(1)) <= hi:
                    n += 1
        return n
    return None


def one_run(args, cfg, setup, rnd):
    profiler, filt, _ = CONFIGS[cfg]
    jdk, threads = setup
    java = os.path.join(args.jdk_home[jdk], "bin", "java")
    tag = f"{cfg}-{jdk}{threads[0]}-r{rnd}"
    files = {k: os.path.join(args.out, f"server-{tag}.{k}") for k in ("out", "err", "jsonl", "samples")}
    cp = os.pathsep.join([os.path.join(args.tomcat, "*"), args.jar, args.classes])
    jvm = ["-Xms512m", "-Xmx512m", "-XX:+UseG1GC"] + JVM_EXTRA.get(cfg, []) + list(args.jvm_opt)
    if args.time_contexts:
        jvm.append("-Dbench.timeContexts=true")
    if args.diagnose:
        jfc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "diagnose.jfc")
        jvm.append(f"-XX:StartFlightRecording=settings={jfc},filename={os.path.join(args.out, f'server-{tag}.jfr')}")
    env = dict(os.environ)
    app = ["--filter", filt, "--phase-ms", str(args.phase_ms), "--phase-groups", PHASE_GROUPS_ARG]
    if threads == "virtual":
        app.append("--virtual")
    if profiler in JFR_STREAM:
        app += ["--jfr-stream", str(args.period), "--samples", files["samples"]]
        if cfg == "jfr-all":
            app += ["--jfr-events", ALL_EVENTS]
    # The jfrctx agent, where a configuration loads it: the same options everywhere but its events
    # and the configuration's extra ones.
    agent = (f"-agentpath:{args.agent}=sink=jsonl:{files['jsonl']},period={args.period}ms,"
             f"events={ALL_EVENTS if profiler == 'jfrctx-all' else 'cpu'}{AGENT_EXTRA.get(cfg, '')}")
    if profiler.startswith("jfrctx"):
        jvm.append(agent)
    elif profiler.startswith("otel"):
        if not args.otel_agent:
            raise SystemExit(f"run.py: configuration {cfg} needs --otel-agent (and --otel-extension)")
        if profiler.startswith("otel-jfrctx"):
            jvm.append(agent)
        jvm += [f"-javaagent:{args.otel_agent}", "-Dotel.service.name=bench", "-Dotel.traces.exporter=none",
                "-Dotel.metrics.exporter=none", "-Dotel.logs.exporter=none"]
        if profiler in ("otel-jfrctx", "otel-jfrctx-root", "otel-jfrctx-noids"):
            if not args.otel_extension:
                raise SystemExit(f"run.py: configuration {cfg} needs --otel-extension")
            jvm.append(f"-Dotel.javaagent.extensions={args.otel_extension}")
            if profiler == "otel-jfrctx-root":
                jvm.append("-Dotel.jfrctx.span=root")
            elif profiler == "otel-jfrctx-noids":
                jvm.append("-Dotel.jfrctx.span=none")
    elif profiler == "pyroscope":
        if not args.pyroscope_jar:
            raise SystemExit(f"run.py: configuration {cfg} needs --pyroscope-jar")
        cp = os.pathsep.join([cp, args.pyroscope_classes])
        jvm.append(f"-javaagent:{args.pyroscope_jar}")
        env.update({
            "PYROSCOPE_APPLICATION_NAME": "jfrctx-bench-server",
            "PYROSCOPE_SERVER_ADDRESS": args.pyroscope_server or f"http://127.0.0.1:{closed_port()}",
            "PYROSCOPE_PROFILER_EVENT": "itimer",
            "PYROSCOPE_PROFILING_INTERVAL": f"{args.period}ms",
            "PYROSCOPE_UPLOAD_INTERVAL": "10s",
            "PYROSCOPE_FORMAT": "jfr",
            "PYROSCOPE_LOG_LEVEL": "error",
        })
    cmd = [java] + jvm + ["-cp", cp, "dev.jfrctx.bench.server.BenchServer"] + app
    rec = {"config": cfg, "jdk": jdk, "threads": threads, "round": rnd, "period_ms": args.period, "ok": False}
    with open(files["err"], "w") as err:
        server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env, cwd=args.out)
    out_lines = []
    drain = None
    try:
        line = read_line(server.stdout, r"listening on", time.monotonic() + 90)
        if not line:
            rec["error"] = "server did not start (see " + files["err"] + ")"
            return rec
        out_lines.append(line)
        # Keep draining stdout (diagnostic flags such as -XX:+PrintCompilation write there).
        drain = threading.Thread(target=lambda: out_lines.extend(server.stdout), daemon=True)
        drain.start()
        port = int(re.search(r"127\.0\.0\.1:(\d+)", line).group(1))
        if profiler == "pyroscope" and "pyroscope_labels_enabled=true" not in line and filt != "off":
            rec["warning"] = "Pyroscope labels not enabled: " + line.strip()
        gen = subprocess.Popen(
            [java, "-Xmx64m", "-XX:TieredStopAtLevel=1", "-cp", args.classes, "dev.jfrctx.bench.server.LoadGen",
             str(port), str(args.connections), str(args.warmup), str(args.measure), args.paths],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            limit = time.monotonic() + args.warmup + args.measure + 60
            if not read_line(gen.stdout, r"^window start", limit):
                rec["error"] = "load generator did not start its window"
                return rec
            s0 = snapshot(server.pid)
            st0 = json.loads(http_get(port, "/admin/stats"))
            end = read_line(gen.stdout, r"^window end", limit)
            s1 = snapshot(server.pid)
            st1 = json.loads(http_get(port, "/admin/stats"))
            gen.wait(timeout=30)
        finally:
            if gen.poll() is None:
                gen.kill()
        if not end:
            rec["error"] = "load generator did not end its window"
            return rec
        m = re.search(r"requests=(\d+) errors=(\d+)", end)
        wall = s1["time"] - s0["time"]
        served = st1["served"] - st0["served"] - 1  # the /admin/stats request itself is not filtered
        proc, groups = cpu_delta(s0, s1)
        rec.update({
            "seconds": wall, "requests": served, "rps": served / wall, "loadgen_requests": int(m.group(1)),
            "errors": int(m.group(2)), "cpu_s": proc, "cpu_us_per_req": proc / max(1, served) * 1e6,
            "groups_s": groups, "gc_count": st1["gc_count"] - st0["gc_count"], "gc_ms": st1["gc_ms"] - st0["gc_ms"],
            "jit_ms": st1["jit_ms"] - st0["jit_ms"],
            "loop_us": (st1["loop_ns"] - st0["loop_ns"]) / max(1, st1["loop_calls"] - st0["loop_calls"]) / 1e3,
            "window_epoch_ns": [st0["epoch_ns"], st1["epoch_ns"]],
            "context_ns": context_percentiles(st0.get("context_ns"), st1.get("context_ns")),
            "open_ns": context_percentiles(st0.get("open_ns"), st1.get("open_ns")),
            "phases": phase_pairs(st1.get("phases"), st0["nano"], st1["nano"]),
            "tag": tag,
        })
        try:
            http_get(port, "/admin/stop")
        except OSError:
            pass
        server.wait(timeout=60)
        app_cpu = groups["request"] + groups["handoff"]
        samples = count_samples(args, profiler, files, st0, st1)
        rec["samples"] = samples
        rec["samples_per_app_cpu_s"] = samples / app_cpu if samples is not None and app_cpu > 0 else None
        rec["ok"] = served > 0
        if served <= 0:
            rec["error"] = "no request served in the window"
    except Exception as e:  # noqa: BLE001 - reported per run
        rec["error"] = f"{type(e).__name__}: {e}"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        if drain:
            drain.join(5)
        with open(files["out"], "w") as f:
            f.writelines(out_lines)
        with open(files["err"]) as f:
            exit_lines = [ln.strip() for ln in f if ln.startswith("jfrctx: samples")]
        if exit_lines:
            rec["agent_exit"] = exit_lines[-1]
        for k in ("jsonl", "samples"):
            if os.path.exists(files[k]) and not args.keep:
                os.remove(files[k])
    return rec


def context_percentiles(h0, h1):
    """p50 and p90 (lower bounds of 10 ns buckets) of the contexts timed inside the window, from
    the cumulative histograms at its ends (ContextTimes.java); None when not timed."""
    if h1 is None:
        return None
    counts = {b: n for b, n in h1}
    for b, n in h0 or []:
        counts[b] -= n
    total = sum(counts.values())
    if total <= 0:
        return None
    out, seen = {"n": total}, 0
    for b in sorted(counts):
        seen += counts[b]
        for q in (50, 90):
            if f"p{q}" not in out and seen * 100 >= total * q:
                out[f"p{q}"] = b
    return out


def phase_pairs(phases, lo, hi):
    """Each B phase inside the window [lo, hi] (nanoTime) against the mean of the A phases on
    either side (A B A B ...): CPU per request and requests per second, B × A, per pair; plus the
    pooled CPU per request of each mode. None when the run has no phases."""
    if phases is None:
        return None
    ps = [p for p in phases if p["start"] >= lo and p["start"] + p["ns"] <= hi and p["served"] > 0]
    a_mode = phases[0]["mode"]

    def cpr(p):
        return p["cpu_ns"] / p["served"]

    def rps(p):
        return p["served"] / p["ns"]

    cpu, rate = [], []
    for i in range(1, len(ps) - 1):
        a0, b, a1 = ps[i - 1], ps[i], ps[i + 1]
        if b["mode"] == a_mode or a0["mode"] != a_mode or a1["mode"] != a_mode:
            continue
        cpu.append(cpr(b) / ((cpr(a0) + cpr(a1)) / 2))
        rate.append(rps(b) / ((rps(a0) + rps(a1)) / 2))
    pooled = {}
    for p in ps:
        m = pooled.setdefault(p["mode"], {})
        for k, v in p.items():
            if k not in ("mode", "start", "ns"):
                m[k] = m.get(k, 0) + v
    return {"a": a_mode, "cpu_ratio": cpu, "rps_ratio": rate, "pooled": pooled}


def mean_ci(xs):
    """Mean and the half-width of its 95 % interval (normal approximation; pairs are ≥ 20)."""
    if len(xs) < 2:
        return (xs[0] if xs else None), None
    return statistics.mean(xs), 1.96 * statistics.stdev(xs) / len(xs) ** 0.5


def summarize_phases(recs):
    """The A/B table: per run, B's CPU per request and req/s over A's in the same JVM."""
    rs = [r for r in recs if r.get("ok") and r.get("phases")]
    if not rs:
        return []
    lines = ["\nTwo filter modes A/B alternating in phases of one JVM (bench/server Phases.java): per "
             "run, B × A paired phase by phase (each B against the mean of the A on either side); "
             "mean ± 95 % interval and median over pairs; pooled = CPU per request of all B phases "
             "over all A phases; /cpu loop µs per call in A and B (platform threads only); CPU of "
             "the jfrctx-* and JFR threads, of the request threads (virtual: their carriers) and of "
             "the GC's per request in A and B (pooled, /proc schedstat; ThreadGroups.java); B − A "
             "per request by thread group, the rest being every other thread (the process's CPU "
             "minus the groups read)",
             "| configuration | JDK | threads | round | pairs | CPU/req B × A, mean ± CI | median | pooled "
             "| req/s B × A, mean ± CI | /cpu loop µs A, B | jfrctx+JFR threads µs/req A, B "
             "| request threads µs/req A, B | GC µs/req A, B | B − A µs/req by group |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rs:
        ph = r["phases"]
        m, ci = mean_ci(ph["cpu_ratio"])
        rm, rci = mean_ci(ph["rps_ratio"])
        pool = ph["pooled"]
        modes = list(pool)
        b = next((k for k in modes if k != ph["a"]), None)

        def per(k, num, den):
            return pool[k].get(num, 0) / pool[k][den] if k in pool and pool[k].get(den) else None

        pooled = per(b, "cpu_ns", "served") / per(ph["a"], "cpu_ns", "served") if b else None
        loops = [per(k, "loop_ns", "loop_calls") for k in (ph["a"], b)]

        def us_per_req(*groups):
            return ", ".join(f"{sum(pool[k].get(g, 0) for g in groups) / pool[k]['served'] / 1e3:.2f}"
                             if k in pool and pool[k]["served"] else "—" for k in (ph["a"], b))
        lines.append("| " + " | ".join([
            r["config"], r["jdk"], r["threads"], str(r["round"]), str(len(ph["cpu_ratio"])),
            f"{m:.4f} ± {ci:.4f}" if ci is not None else "—",
            f"{statistics.median(ph['cpu_ratio']):.4f}" if ph["cpu_ratio"] else "—",
            f"{pooled:.4f}" if pooled else "—",
            f"{rm:.4f} ± {rci:.4f}" if rci is not None else "—",
            ", ".join(f"{x / 1e3:.0f}" if x else "—" for x in loops),
            us_per_req("jfrctx_ns", "jfr_ns"),
            us_per_req("request_ns"),
            us_per_req("gc_ns"),
            group_deltas(pool, ph["a"], b),
        ]) + " |")
    return lines


def group_deltas(pool, a, b):
    """B − A in µs per request for each phase group and for the rest of the process."""
    if not b or not all(pool.get(k, {}).get("served") for k in (a, b)):
        return "—"

    def per_req(k, key):
        return pool[k].get(key, 0) / pool[k]["served"] / 1e3

    def rest(k):
        return per_req(k, "cpu_ns") - sum(per_req(k, f"{g}_ns") for g in PHASE_GROUPS)
    parts = [f"{g} {per_req(b, f'{g}_ns') - per_req(a, f'{g}_ns'):+.2f}" for g in PHASE_GROUPS]
    return ", ".join(parts + [f"rest {rest(b) - rest(a):+.2f}"])


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt_spread(xs, f="{:.3f}"):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "—"
    return (f + " [" + f + "–" + f + "]").format(statistics.median(xs), min(xs), max(xs))


def summarize(recs, out):
    lines = []
    setups = []
    for r in recs:
        if (r["jdk"], r["threads"]) not in setups:
            setups.append((r["jdk"], r["threads"]))
    for jdk, threads in setups:
        rs = [r for r in recs if r["jdk"] == jdk and r["threads"] == threads and r.get("ok")]
        periods = sorted({r.get("period_ms", PERIOD_MS) for r in rs})
        lines.append(f"\nJDK {jdk}, {threads} request threads, execution samples every "
                     f"{'/'.join(map(str, periods))} ms: median [min–max] over rounds; ratios paired per "
                     f"round against the same round's base: 'otel' (the OTel agent alone) for otel-* "
                     f"configurations, 'jfr-all' for jfrctx-request-all when run, 'jfr' (JFR alone) "
                     f"for the others")
        lines.append("| configuration | req/s | CPU µs/req | req/s × base | CPU/req × base | request threads µs/req "
                     "| JIT µs/req | GC µs/req | jfrctx+JFR threads µs/req | GCs/1k req | samples/app-CPU-s | /cpu loop µs |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for cfg in CONFIGS:
            mine = [r for r in rs if r["config"] == cfg]
            if not mine:
                continue
            base_cfg = "otel" if cfg.startswith("otel") else "jfr"
            if any(r["config"] == BASE.get(cfg) for r in rs):
                base_cfg = BASE[cfg]
            base = {r["round"]: r for r in rs if r["config"] == base_cfg}
            rps_ratio = [r["rps"] / base[r["round"]]["rps"] for r in mine if r["round"] in base]
            cpu_ratio = [r["cpu_us_per_req"] / base[r["round"]]["cpu_us_per_req"] for r in mine if r["round"] in base]

            def per_req(r, *gs):
                return sum(r["groups_s"][g] for g in gs) / max(1, r["requests"]) * 1e6

            lines.append("| " + " | ".join([
                cfg,
                fmt_spread([r["rps"] for r in mine], "{:.0f}"),
                fmt_spread([r["cpu_us_per_req"] for r in mine], "{:.0f}"),
                fmt_spread(rps_ratio),
                fmt_spread(cpu_ratio),
                fmt_spread([per_req(r, "request") for r in mine], "{:.0f}"),
                fmt_spread([per_req(r, "jit") for r in mine], "{:.1f}"),
                fmt_spread([per_req(r, "gc") for r in mine], "{:.1f}"),
                fmt_spread([per_req(r, "jfrctx", "jfr") for r in mine], "{:.1f}"),
                fmt_spread([r["gc_count"] / max(1, r["requests"]) * 1000 for r in mine], "{:.2f}"),
                fmt_spread([r.get("samples_per_app_cpu_s") for r in mine], "{:.1f}"),
                fmt_spread([r.get("loop_us") for r in mine], "{:.0f}"),
            ]) + " |")
    lines += summarize_phases(recs)
    timed = [r for r in recs if r.get("ok") and r.get("context_ns")]
    if timed:
        lines.append("\nThe filter's context timed on the request thread (opening + closing, each between two "
                     "System.nanoTime() reads; 10 ns buckets), p50 / p90 ns per round:")
        for r in timed:
            c, o = r["context_ns"], r.get("open_ns") or {}
            lines.append(f"- {r['config']} JDK {r['jdk']} {r['threads']} round {r['round']}: "
                         f"{c['p50']} / {c['p90']} ({c['n']} requests); the opening alone "
                         f"{o.get('p50')} / {o.get('p90')}")
    failed = [r for r in recs if not r.get("ok")]
    for r in failed:
        lines.append(f"FAILED {r['config']} JDK {r['jdk']} {r['threads']} round {r['round']}: {r.get('error')}")
    for r in recs:
        if r.get("warning"):
            lines.append(f"WARNING {r['config']} JDK {r['jdk']} round {r['round']}: {r['warning']}")
        if r.get("errors"):
            lines.append(f"note: {r['config']} JDK {r['jdk']} round {r['round']}: {r['errors']} HTTP errors")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "server-summary.txt"), "w") as f:
        f.write(text)
    return text, failed


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--classes", required=True)
    p.add_argument("--pyroscope-classes", default="")
    p.add_argument("--tomcat", required=True)
    p.add_argument("--agent", required=True)
    p.add_argument("--jar", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warmup", type=float, default=10)
    p.add_argument("--measure", type=float, default=20)
    p.add_argument("--connections", type=int, default=8)
    p.add_argument("--period", type=int, default=PERIOD_MS,
                   help="ms between execution samples, for every profiler (default %(default)s)")
    p.add_argument("--paths", default=PATHS, help="comma-separated request paths, cycled (default: all five)")
    p.add_argument("--setups", default="17:platform")
    p.add_argument("--configs", default="none,jfr,jfrctx-off,jfrctx-snapshot,jfrctx-endpoint,jfrctx-request")
    p.add_argument("--pyroscope-jar", default="")
    p.add_argument("--otel-agent", default="", help="opentelemetry-javaagent.jar (scripts/otel.sh)")
    p.add_argument("--otel-extension", default="", help="target/jfrctx-otel.jar")
    p.add_argument("--pyroscope-server", default="")
    p.add_argument("--jvm-opt", action="append", default=[])
    p.add_argument("--phase-ms", type=int, default=2000,
                   help="ms per phase of the A/B configurations (*-ab; default %(default)s)")
    p.add_argument("--keep", action="store_true", help="keep the sample files")
    p.add_argument("--time-contexts", action="store_true",
                   help="time the filter's context on the request thread (ContextTimes.java)")
    p.add_argument("--diagnose", action="store_true",
                   help="add bench/server/diagnose.jfc as a file recording to every run (see evidence.py)")
    args = p.parse_args()
    for k in ("out", "classes", "pyroscope_classes", "tomcat", "agent", "jar", "pyroscope_jar", "otel_agent",
              "otel_extension"):
        if getattr(args, k):
            setattr(args, k, os.path.abspath(getattr(args, k)))
    os.makedirs(args.out, exist_ok=True)
    args.jdk_home = {v: os.environ.get(f"JFRCTX_JDK{v}", "") for v in ("17", "21", "25")}
    setups = []
    for s in args.setups.split():
        jdk, threads = s.split(":")
        if threads not in ("platform", "virtual") or not args.jdk_home.get(jdk):
            raise SystemExit(f"run.py: bad setup {s} (JDK 17/21/25 from JFRCTX_JDKnn, platform|virtual)")
        setups.append((jdk, threads))
    configs = args.configs.split(",")
    for c in configs:
        if c not in CONFIGS:
            raise SystemExit(f"run.py: unknown configuration {c} (one of {', '.join(CONFIGS)})")
    recs = []
    total = args.rounds * len(setups) * len(configs)
    with open(os.path.join(args.out, "server.jsonl"), "a") as log:
        for rnd in range(1, args.rounds + 1):
            for setup in setups:
                for cfg in configs:
                    print(f"server [{len(recs) + 1}/{total}] round {rnd}: JDK {setup[0]} {setup[1]} {cfg}",
                          file=sys.stderr, flush=True)
                    rec = one_run(args, cfg, setup, rnd)
                    recs.append(rec)
                    log.write(json.dumps(rec) + "\n")
                    log.flush()
                    if rec.get("ok"):
                        print(f"    {rec['rps']:.0f} req/s, {rec['cpu_us_per_req']:.0f} µs CPU/req, "
                              f"samples/app-CPU-s {rec['samples_per_app_cpu_s']}", file=sys.stderr, flush=True)
                    else:
                        print(f"    FAILED: {rec.get('error')}", file=sys.stderr, flush=True)
    text, failed = summarize(recs, args.out)
    print(text)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
