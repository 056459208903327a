#!/usr/bin/env python3
"""Where the CPU goes: reads the diagnosis recordings of a `run.py --diagnose` run and prints, per
run and inside its measured window, what the JVM did besides the application's work.

    python3 bench/server/evidence.py OUT_DIR [--jfr PATH_TO_jfr_TOOL]

Per run (configuration, JDK, round): deoptimizations (and their top reasons and methods),
compilations, GCs and GC pause time, safepoints, contended monitor enters over 1 ms, per 1 000
requests; then the execution samples of request threads: share whose leaf frame is in each of a
few families (application work, jfrctx facade, JNI into the agent, reference/Cleaner machinery,
Tomcat, JDK), and the top leaf methods. Standard library and the JDK's `jfr` tool only.
"""

import argparse
import collections
import datetime
import json
import os
import subprocess
import sys


def epoch_ns(s):
    # "2026-11-23T15:40:01.123456789Z" (jfr --json) -> ns
    s = s.rstrip("Z")
    base, _, frac = s.partition(".")
    t = datetime.datetime.fromisoformat(base).replace(tzinfo=datetime.timezone.utc)
    return int(t.timestamp()) * 1_000_000_000 + int((frac + "000000000")[:9])


def events(jfr_tool, path, names):
    out = subprocess.run([jfr_tool, "print", "--json", "--events", ",".join(names), path],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["recording"]["events"]


def frame_name(f):
    m = f.get("method", {})
    t = m.get("type", {}).get("name", "?")
    return f"{t.replace('/', '.')}.{m.get('name', '?')}"


FAMILIES = [
    ("jfrctx facade", ("dev.jfrctx.RecordingContext", "dev.jfrctx.internal", "dev.jfrctx.Scope", "dev.jfrctx.Context")),
    ("JNI into the agent", ("dev.jfrctx.agent.",)),
    ("references/Cleaner", ("java.lang.ref.", "jdk.internal.ref.")),
    ("app work", ("dev.jfrctx.bench.server.",)),
    ("Tomcat", ("org.apache.",)),
    ("JDK other", ("java.", "jdk.", "sun.")),
]


def family(name):
    for fam, prefixes in FAMILIES:
        if name.startswith(prefixes):
            return fam
    return "other"


def analyse(jfr_tool, rec, path):
    lo, hi = rec["window_epoch_ns"]
    names = ["jdk.ExecutionSample", "jdk.Deoptimization", "jdk.Compilation", "jdk.GarbageCollection",
             "jdk.SafepointBegin", "jdk.JavaMonitorEnter", "jdk.GCReferenceStatistics"]
    evs = [e for e in events(jfr_tool, path, names) if lo <= epoch_ns(e["values"]["startTime"]) <= hi]
    by = collections.defaultdict(list)
    for e in evs:
        by[e["type"]].append(e["values"])
    k = 1000 / max(1, rec["requests"])
    print(f"\n## {rec['config']} JDK {rec['jdk']} {rec['threads']} round {rec['round']}: {rec['requests']} requests, "
          f"{rec['cpu_us_per_req']:.0f} µs CPU/req, request threads "
          f"{rec['groups_s']['request'] / max(1, rec['requests']) * 1e6:.0f} µs/req")
    deopt = by["jdk.Deoptimization"]
    gcs = by["jdk.GarbageCollection"]
    pause_ms = sum(g.get("sumOfPauses", 0) for g in gcs) / 1e6 if gcs and isinstance(gcs[0].get("sumOfPauses"), (int, float)) else None
    print(f"per 1000 requests: deoptimizations {len(deopt) * k:.2f}, compilations {len(by['jdk.Compilation']) * k:.2f}, "
          f"GCs {len(gcs) * k:.3f}, safepoints {len(by['jdk.SafepointBegin']) * k:.2f}, "
          f"contended monitor enters >1ms {len(by['jdk.JavaMonitorEnter']) * k:.2f}"
          + (f", GC pauses {pause_ms:.1f} ms in window" if pause_ms is not None else ""))
    refs = collections.Counter()
    for r in by["jdk.GCReferenceStatistics"]:
        refs[r.get("type", "?")] += r.get("count", 0)
    if refs:
        print("references processed by GC in window: " + ", ".join(f"{t} {n}" for t, n in refs.most_common()))
    if deopt:
        reasons = collections.Counter(f"{d.get('reason')}/{d.get('action')}" for d in deopt)
        methods = collections.Counter(frame_name({"method": d.get("method", {})}) for d in deopt)
        print("deopt reasons: " + ", ".join(f"{r} {n}" for r, n in reasons.most_common(5)))
        print("deopt methods: " + ", ".join(f"{m} {n}" for m, n in methods.most_common(6)))
    samples = [s for s in by["jdk.ExecutionSample"]
               if str(s.get("sampledThread", {}).get("javaName", "")).startswith(("req-", "handoff-", ""))]
    req = []
    for s in samples:
        name = s.get("sampledThread", {}).get("javaName") or ""
        if name.startswith("req-") or name == "" or s.get("sampledThread", {}).get("virtual"):
            frames = (s.get("stackTrace") or {}).get("frames") or []
            if frames:
                req.append(frames)
    fams = collections.Counter()
    anywhere = collections.Counter()
    leaves = collections.Counter()
    for frames in req:
        leaf = frame_name(frames[0])
        leaves[leaf] += 1
        fams[family(leaf)] += 1
        seen = {family(frame_name(f)) for f in frames}
        for fam in ("jfrctx facade", "JNI into the agent", "references/Cleaner"):
            if fam in seen:
                anywhere[fam] += 1
    n = max(1, len(req))
    print(f"request-thread samples in window: {len(req)}; leaf family: "
          + ", ".join(f"{f} {c / n * 100:.1f}%" for f, c in fams.most_common()))
    print("frames anywhere on the stack: " + ", ".join(f"{f} {anywhere[f] / n * 100:.1f}%"
                                                       for f in ("jfrctx facade", "JNI into the agent", "references/Cleaner")))
    print("top leaves: " + "; ".join(f"{m} {c / n * 100:.1f}%" for m, c in leaves.most_common(8)))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--jfr", default=os.path.join(os.environ.get("JFRCTX_JDK17", "/usr"), "bin", "jfr"))
    args = p.parse_args()
    with open(os.path.join(args.out, "server.jsonl")) as f:
        recs = [json.loads(line) for line in f if line.strip()]
    for rec in recs:
        if not rec.get("ok") or "tag" not in rec:
            continue
        path = os.path.join(args.out, f"server-{rec['tag']}.jfr")
        if os.path.exists(path):
            analyse(args.jfr, rec, path)
        else:
            print(f"(no recording {path})", file=sys.stderr)


if __name__ == "__main__":
    main()
