#!/usr/bin/env bash
# soak.sh — a long run of the ground-truth workload under the agent (not a unit test)
#
#   scripts/soak.sh                      10 minutes on JDK 17 (platform threads); results into
#                                        bench/stress.md (section "soak")
#   scripts/soak.sh --smoke              30 s (scripts/test.sh runs this); target/stress/soak.md only
#   options: --jdk 17|21|25  --mode platform|virtual  --seconds N
#
# The workload is tests/java/gt/GroundTruth.java (three workers switching contexts every
# 0.1-5 ms, work in methods named after the context they must run in, a pool fed through
# snapshots), sampled every 1 ms into JSON lines. Besides the checks of scripts/stress.sh (exit
# code, summary adds up exactly, file lines = received, every line parses, no -Xcheck:jni report,
# no agent message besides the summary), every sample in a gt_* method is classified as in
# tests/it/ground_truth.rs: wrong must be 0. RSS is sampled every second; the report shows it per
# minute (every 5 s for a smoke run) and its growth over the second half of the run.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/stress.sh
source "$root/scripts/stress.sh" --lib

smoke=0
jdk=17
mode=platform
seconds=600
while [ $# -gt 0 ]; do
    case "$1" in
        --smoke) smoke=1; seconds=30 ;;
        --jdk) jdk="$2"; shift ;;
        --mode) mode="$2"; shift ;;
        --seconds) seconds="$2"; shift ;;
        *) echo "usage: scripts/soak.sh [--smoke] [--jdk 17|21|25] [--mode platform|virtual] [--seconds N]" >&2; exit 2 ;;
    esac
    shift
done

stress_setup "$root/target/stress" || exit 1
rm -f "$STRESS_OUT/rows.md"
name="soak-$jdk-$mode"
failed=0
run_case "$name" "$jdk" $((seconds + 300)) period=1ms gt.GroundTruth "$seconds" "$mode" || failed=1
base="$STRESS_OUT/$name"

# Ground truth over the whole run, and RSS over time.
python3 - "$base" "$smoke" >"$STRESS_OUT/soak-detail.md" <<'PY' || failed=1
import json, sys
base, smoke = sys.argv[1], sys.argv[2] == "1"
def expected(m):
    n = m[len("gt_"):]
    if n == "none":
        return {}
    if n == "inner":
        return {"gt": "inner", "layer": "2"}
    return {"gt": n}
correct = unknown = wrong = 0
reasons = {}
examples = []
with open(base + ".jsonl", errors="replace") as f:
    for line in f:
        if not line.strip():
            continue
        s = json.loads(line)
        method = None
        for fr in s.get("stack", []):
            m = fr.get("method", "")
            if m.startswith("gt.GroundTruth.gt_"):
                method = m[len("gt.GroundTruth."):]
                break
        if method is None:
            continue
        ctx = s.get("context")
        if ctx is None and s.get("unknown"):
            unknown += 1
            reasons[s["unknown"]] = reasons.get(s["unknown"], 0) + 1
        elif ctx == expected(method):
            correct += 1
        else:
            wrong += 1
            if len(examples) < 5:
                examples.append(f"{method}: {line.strip()[:300]}")
total = correct + unknown + wrong
pct = lambda n: f"{100.0 * n / total:.2f} %" if total else "n/a"
why = " " + ", ".join(f"{k}={v:,}" for k, v in sorted(reasons.items())) if reasons else ""
print(f"Samples in gt_* methods: {total:,}: correct {correct:,} ({pct(correct)}), unknown "
      f"{unknown:,} ({pct(unknown)}){why}, **wrong {wrong}**.")
print()
rss = []
for l in open(base + ".rss.csv").read().splitlines()[1:]:
    t, kb = l.split(",")
    rss.append((int(t), int(kb)))
step = 5 if smoke else 60
if rss:
    print("| t (s) | " + " | ".join(str(t) for t, _ in rss if t % step == 0 or (t, _) == rss[-1]) + " |")
    cols = [kb for t, kb in rss if t % step == 0 or (t, kb) == rss[-1]]
    print("|---|" + "---|" * len(cols))
    print("| RSS (MB) | " + " | ".join(f"{kb / 1024:.0f}" for kb in cols) + " |")
    print()
    half = [(t, kb) for t, kb in rss if t >= rss[-1][0] / 2]
    if len(half) >= 2:
        n = len(half)
        mt = sum(t for t, _ in half) / n
        mk = sum(kb for _, kb in half) / n
        var = sum((t - mt) ** 2 for t, _ in half)
        slope = sum((t - mt) * (kb - mk) for t, kb in half) / var if var else 0.0
        print(f"RSS over the second half of the run: {half[0][1] / 1024:.0f} MB → "
              f"{half[-1][1] / 1024:.0f} MB, least-squares slope {slope * 60 / 1024:+.2f} MB/min.")
if wrong:
    print()
    print("Wrong samples (first ones):")
    for e in examples:
        print("    " + e)
    sys.exit(1)
PY

report="$STRESS_OUT/soak.md"
{
    if [ "$smoke" = 1 ]; then echo "Smoke run ($seconds s), $(date -u '+%Y-%m-%d %H:%M UTC')."; else
        echo "Full run ($seconds s), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(uname -r)."; fi
    echo "Workload: \`gt.GroundTruth $seconds $mode\` on JDK $jdk, agent \`period=1ms\`, JSON lines."
    echo
    stress_table_header
    cat "$STRESS_OUT/rows.md"
    echo
    cat "$STRESS_OUT/soak-detail.md"
} >"$report"
cat "$report"
if [ "$smoke" = 0 ]; then
    stress_publish soak "$report"
    stress_say "results written to bench/stress.md"
fi
[ "$failed" = 0 ] && stress_say "soak passed" || stress_say "soak FAILED (details in $STRESS_OUT)"
exit "$failed"
