#!/usr/bin/env python3
"""Summary table of one scripts/bench.sh run: python3 bench/summarize.py RESULTS_DIR.

Reads what bench.sh wrote (jmh-*.tsv, overhead.jsonl and overhead-*.err, criterion/, loom.log,
machine.txt) and prints medians, spreads, ratios against the baseline measured in the same run,
and each target as MET or MISSED. Standard library only.
"""

import glob
import json
import os
import re
import statistics
import sys

# Targets from the benchmark issue.
TARGET_THROUGHPUT_LOSS_PCT = 1.0   # jfrctx vs JFR alone
TARGET_EXTRA_CPU_PCT_CORE = 0.5    # jfrctx vs JFR alone, % of one core
TARGET_DECIDE_PER_S = 5e6          # Joiner::decide, one core


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def verdict(ok):
    return "MET" if ok else "MISSED"


def section(title):
    print()
    print("=" * 100)
    print(title)
    print("=" * 100)


def machine(d):
    path = os.path.join(d, "machine.txt")
    if os.path.exists(path):
        section("machine")
        with open(path) as f:
            print(f.read().rstrip())


def jmh(d):
    files = sorted(glob.glob(os.path.join(d, "jmh-jdk*.tsv")))
    if not files:
        return
    section("1. hot path (JMH, AverageTime, 1 thread, -prof gc): ns per op = one install + uninstall pair\n"
            "   median [min-max] over the measurement iterations. wall = JMH's score; cpu = CPU time of the\n"
            "   benchmark thread (robust to being descheduled on a shared machine). Ratios use cpu:\n"
            "   x nano = to one System.nanoTime() read, x JFR ev = to one JFR event per context, same JDK and run")
    for path in files:
        with open(path) as f:
            rows = [line.rstrip("\n").split("\t") for line in f][1:]
        if not rows:
            continue
        rows = [r + ["nan"] * (13 - len(r)) for r in rows]  # older files: no cpu columns
        label = rows[0][0]

        def cpu_of(name):
            return next((float(r[10]) for r in rows if r[2] == name), float("nan"))

        floor = cpu_of("FloorBench.nanoTime")
        jfr = cpu_of("JfrEventBench.eventPerSwitch")
        print(f"\n{label}:")
        print(f"  {'group':<10} {'benchmark':<36} {'wall ns/op [min-max]':>26} {'cpu ns/op [min-max]':>26}"
              f" {'x nano':>7} {'x JFR ev':>8} {'B/op':>6}")
        for r in rows:
            med, lo, hi, alloc = float(r[3]), float(r[4]), float(r[5]), float(r[8])
            cmed, clo, chi = float(r[10]), float(r[11]), float(r[12])
            print(f"  {r[1]:<10} {r[2]:<36} {med:9.1f} [{lo:6.1f}-{hi:7.1f}] {cmed:9.1f} [{clo:6.1f}-{chi:7.1f}]"
                  f" {cmed / floor:7.2f} {cmed / jfr:8.2f} {alloc:6.1f}")
        peers = os.path.join(d, f"peers-{label}.txt")
        if os.path.exists(peers):
            with open(peers) as f:
                for line in f:
                    print("  peer set-up: " + line.rstrip().replace("\t", ": "))
        fails = os.path.join(d, f"jmh-{label}-failures.txt")
        if os.path.exists(fails):
            with open(fails) as f:
                for line in f:
                    print("  NOT MEASURED: " + line.rstrip())


def agent_summary(path):
    """The agent's exit line (`jfrctx: samples received=...`) from a stderr capture."""
    if not os.path.exists(path):
        return None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("jfrctx: samples"):
                return line.strip()
    return None


def overhead(d):
    path = os.path.join(d, "overhead.jsonl")
    if not os.path.exists(path):
        return
    runs = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                runs.append(json.loads(line))
    if not runs:
        print("\noverhead: no results")
        return
    by = {}
    for r in runs:
        by.setdefault(r["config"], []).append(r)
    first = runs[0]
    section(f"2. application overhead: {first['threads']} threads, work={first['work']} steps per context, "
            f"{first['seconds']:.0f} s measured per run, {len(by.get('none', []))} interleaved round(s)\n"
            "   median [min-max] over rounds")
    for r in runs:
        r["workload_cpu_ns_per_op"] = (r.get("thread_cpu_cores", {}).get("workload", float("nan"))
                                       * r["seconds"] * 1e9 / r["ops"])
    print(f"  {'config':<8} {'ops/s':>22} {'transitions/s/thread':>21} {'CPU cores':>20} {'CPU ns/op':>22}"
          f" {'workload-thread CPU ns/op':>27}")
    for cfg in ("none", "jfr", "jfrctx"):
        rs = by.get(cfg, [])
        if not rs:
            continue

        def col(key, fmt):
            xs = [r[key] for r in rs]
            return f"{fmt.format(median(xs))} [{fmt.format(min(xs))}-{fmt.format(max(xs))}]"

        print(f"  {cfg:<8} {col('ops_per_s', '{:.0f}'):>22} {median([r['switches_per_s_per_thread'] for r in rs]):>21.0f} "
              f"{col('cores', '{:.3f}'):>20} {col('cpu_ns_per_op', '{:.0f}'):>22} {col('workload_cpu_ns_per_op', '{:.0f}'):>27}")
    print("\n  per-thread CPU (cores, median over rounds; /proc/self/task utime+stime, 10 ms resolution):")
    groups = sorted({g for r in runs for g in r.get("thread_cpu_cores", {})})
    print("  " + f"{'config':<8}" + "".join(f"{g:>17}" for g in groups))
    for cfg in ("none", "jfr", "jfrctx"):
        rs = by.get(cfg, [])
        if rs:
            print("  " + f"{cfg:<8}" + "".join(
                f"{median([r['thread_cpu_cores'].get(g, 0.0) for r in rs]):>17.4f}" for g in groups))

    # Paired ratios per round (the configurations of a round ran back to back).
    rounds = min(len(by.get(c, [])) for c in ("none", "jfr", "jfrctx"))
    if rounds == 0:
        return
    loss_vs_jfr, loss_jfr_vs_none, extra_cpu, extra_cpu_threads = [], [], [], []
    proxy_vs_jfr, proxy_jfr_vs_none = [], []
    for i in range(rounds):
        n, j, c = by["none"][i], by["jfr"][i], by["jfrctx"][i]
        loss_vs_jfr.append(100.0 * (1 - c["ops_per_s"] / j["ops_per_s"]))
        loss_jfr_vs_none.append(100.0 * (1 - j["ops_per_s"] / n["ops_per_s"]))
        # CPU the same amount of work costs more with jfrctx, at jfrctx's rate, in % of a core.
        extra_cpu.append(100.0 * (c["cpu_ns_per_op"] - j["cpu_ns_per_op"]) * c["ops_per_s"] / 1e9)
        tc, tj = c.get("thread_cpu_cores", {}), j.get("thread_cpu_cores", {})
        mine = sum(v for k, v in tc.items() if k.startswith("jfrctx")) + tc.get("jfr", 0.0)
        extra_cpu_threads.append(100.0 * (mine - tj.get("jfr", 0.0)))
        # Throughput a CPU-bound workload loses when each op costs its threads more CPU.
        proxy_vs_jfr.append(100.0 * (1 - j["workload_cpu_ns_per_op"] / c["workload_cpu_ns_per_op"]))
        proxy_jfr_vs_none.append(100.0 * (1 - n["workload_cpu_ns_per_op"] / j["workload_cpu_ns_per_op"]))

    def stat(xs):
        return f"{median(xs):+.2f} % [{min(xs):+.2f} .. {max(xs):+.2f}]"

    contended = median([r["cores"] for r in runs]) < 0.9 * first["threads"]
    print("\n  paired per round, median [min..max]:")
    print(f"    throughput loss (ops/s), JFR alone vs no JFR:   {stat(loss_jfr_vs_none)}")
    ok = median(loss_vs_jfr) <= TARGET_THROUGHPUT_LOSS_PCT
    print(f"    throughput loss (ops/s), jfrctx vs JFR alone:   {stat(loss_vs_jfr)}   "
          f"target <= {TARGET_THROUGHPUT_LOSS_PCT} %: "
          + ("NOT EVALUABLE (the workload got less than 90 % of its cores: other load on the machine)"
             if contended else verdict(ok)))
    print(f"    workload-thread CPU/op proxy, JFR vs none:      {stat(proxy_jfr_vs_none)}")
    ok = median(proxy_vs_jfr) <= TARGET_THROUGHPUT_LOSS_PCT
    print(f"    workload-thread CPU/op proxy, jfrctx vs JFR:    {stat(proxy_vs_jfr)}   "
          f"target <= {TARGET_THROUGHPUT_LOSS_PCT} %: {verdict(ok)}")
    ok = median(extra_cpu) <= TARGET_EXTRA_CPU_PCT_CORE
    print(f"    extra process CPU per op x rate, vs JFR:        {stat(extra_cpu)} of a core   "
          f"target <= {TARGET_EXTRA_CPU_PCT_CORE} %: {verdict(ok)}")
    ok = median(extra_cpu_threads) <= TARGET_EXTRA_CPU_PCT_CORE
    print(f"    profiler threads (jfrctx-* + JFR) vs JFR:       {stat(extra_cpu_threads)} of a core   "
          f"target <= {TARGET_EXTRA_CPU_PCT_CORE} %: {verdict(ok)}")
    for i in range(1, rounds + 1):
        line = agent_summary(os.path.join(d, f"overhead-jfrctx-r{i}.err"))
        if line:
            print(f"  agent, round {i}: {line}")


def criterion(d):
    base = os.path.join(d, "criterion")
    if not os.path.isdir(base):
        return
    section("3. join throughput (criterion): samples per CPU-second of the benchmark thread,"
            " median [min-max] over criterion's samples")
    for bench_dir in sorted(glob.glob(os.path.join(base, "*", "*"))):
        try:
            with open(os.path.join(bench_dir, "new", "benchmark.json")) as f:
                meta = json.load(f)
            with open(os.path.join(bench_dir, "new", "sample.json")) as f:
                sample = json.load(f)
            with open(os.path.join(bench_dir, "new", "estimates.json")) as f:
                est = json.load(f)
        except (OSError, ValueError):
            continue
        elements = (meta.get("throughput") or {}).get("Elements")
        if not elements:
            continue
        per_iter = [t / n for t, n in zip(sample["times"], sample["iters"])]
        rates = sorted(elements / (t / 1e9) for t in per_iter)
        med = elements / (est["median"]["point_estimate"] / 1e9)
        name = meta["full_id"]
        target = ""
        if name.startswith("decide/"):
            target = f"  target >= {TARGET_DECIDE_PER_S / 1e6:.0f} M/s: {verdict(med >= TARGET_DECIDE_PER_S)}" + (
                "" if med >= TARGET_DECIDE_PER_S else f" (by {100 * (1 - med / TARGET_DECIDE_PER_S):.0f} %)")
        print(f"  {name:<52} {med / 1e6:8.2f} M/s [{rates[0] / 1e6:6.2f}-{rates[-1] / 1e6:6.2f}]"
              f"  {1e9 / med:8.1f} ns/sample{target}")


def loom(d):
    path = os.path.join(d, "loom.log")
    if not os.path.exists(path):
        return
    section("4. loom model check of the ring protocol (tests/loom_ring.rs)")
    with open(path, errors="replace") as f:
        text = f.read()
    for line in text.splitlines():
        if re.match(r"^test .* \.\.\. ", line) or line.startswith("test result:") or "explored" in line:
            print("  " + line)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    d = sys.argv[1]
    machine(d)
    try:
        with open(os.path.join(d, "machine.txt")) as f:
            if "mode: smoke" in f.read():
                print("\nSMOKE RUN: each harness ran for a few seconds to check that it works;"
                      " the figures and verdicts below are not measurements.")
    except OSError:
        pass
    jmh(d)
    overhead(d)
    criterion(d)
    loom(d)
    notes = os.path.join(d, "notes.txt")
    if os.path.exists(notes):
        section("notes")
        with open(notes) as f:
            print(f.read().rstrip())


if __name__ == "__main__":
    main()
