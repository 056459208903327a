#!/usr/bin/env bash
# stress.sh — stress runs of the agent in real JVMs (not unit tests; workload tests/java/gt/Stress.java)
#
#   scripts/stress.sh            full runs (~6 min), results into bench/stress.md (section "stress")
#   scripts/stress.sh --smoke    short runs (~40 s; scripts/test.sh runs this), results into
#                                target/stress/stress.md only
#
# Cases (every JVM with -Xcheck:jni and the agent at period=1ms, JSON lines into target/stress/):
#   switch     8 threads switch contexts as fast as they can for 60 s (smoke: 8 s), JDK 17
#   platform   100 000 platform threads (smoke: 10 000), 64 alive at once, each installs a
#              context and ends, JDK 17
#   virtual    100 000 virtual threads (smoke: 10 000) on JDK 21 and JDK 25 (smoke: 21 only)
#
# For each case: RSS of the JVM every second (/proc/PID/status VmRSS, kept in
# target/stress/CASE.rss.csv), the agent's summary counters, the exit code. A case fails when the
# exit code is not 0, the summary is missing or does not add up (received = with_context +
# without_context + unknown + dropped, exactly), the JSON-lines file has another number of lines or
# a line that does not parse, -Xcheck:jni reports anything, or the agent logs anything besides
# the summary. Exit status 1 when any case failed.
#
# STRESS_JVM_ARGS (environment) replaces the extra JVM options of every run (default
# -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints, so frames are exact; set it empty to
# measure without). scripts/soak.sh sources this file with --lib for its helpers.
set -euo pipefail

_stress_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# ---- helpers ---------------------------------------------------------------------------------

stress_say() { echo "stress: $*" >&2; }

# stress_setup OUTDIR: JDKs, the agent, the workload classes. Sets STRESS_OUT, STRESS_AGENT,
# STRESS_CLASSES.
stress_setup() {
    STRESS_OUT="$1"
    mkdir -p "$STRESS_OUT"
    cd "$_stress_root"
    # shellcheck source=scripts/jdks.sh
    source scripts/jdks.sh || { stress_say "scripts/jdks.sh failed"; return 1; }
    local target="${CARGO_TARGET_DIR:-$_stress_root/target}"
    case "$target" in /*) ;; *) target="$_stress_root/$target" ;; esac
    stress_say "building the agent (cargo build --release --lib)"
    cargo build --release --lib --quiet || { stress_say "cargo build failed"; return 1; }
    STRESS_AGENT="$target/release/libjfrctx.so"
    STRESS_CLASSES="$STRESS_OUT/classes"
    rm -rf "$STRESS_CLASSES"
    mkdir -p "$STRESS_CLASSES"
    local sources
    sources="$(find java/src/main/java java/src/testFixtures/java tests/java -name '*.java' | sort)"
    # shellcheck disable=SC2086
    "$JFRCTX_JDK17/bin/javac" --release 17 -nowarn -encoding UTF-8 -d "$STRESS_CLASSES" $sources \
        || { stress_say "javac failed"; return 1; }
}

stress_java() {  # $1 JDK feature version → bin/java
    local var="JFRCTX_JDK$1"
    echo "${!var}/bin/java"
}

# run_case NAME JDK SECONDS_LIMIT AGENT_OPTIONS MAIN ARGS...
# Runs one JVM, watches it, checks it. Appends one Markdown table row to $STRESS_OUT/rows.md,
# writes $STRESS_OUT/NAME.{stdout,stderr,rss.csv,jsonl,result}. Returns 1 when a check failed.
run_case() {
    local name="$1" jdk="$2" limit="$3" options="$4" main="$5"
    shift 5
    local base="$STRESS_OUT/$name" java
    java="$(stress_java "$jdk")"
    rm -f "$base".*
    stress_say "$name: JDK $jdk, $main $*"
    local t0=$SECONDS
    # shellcheck disable=SC2086
    "$java" -Xcheck:jni ${STRESS_JVM_ARGS--XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints} "-agentpath:$STRESS_AGENT=sink=jsonl:$base.jsonl,$options" \
        -cp "$STRESS_CLASSES" "$main" "$@" >"$base.stdout" 2>"$base.stderr" &
    local pid=$! rc=0
    echo "seconds,rss_kb" >"$base.rss.csv"
    while kill -0 "$pid" 2>/dev/null; do
        local rss
        rss="$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)"
        [ -n "$rss" ] && echo "$((SECONDS - t0)),$rss" >>"$base.rss.csv"
        if [ $((SECONDS - t0)) -gt "$limit" ]; then
            stress_say "$name: still running after ${limit}s; killing it"
            kill -KILL "$pid" 2>/dev/null || true
        fi
        sleep 1
    done
    wait "$pid" || rc=$?
    local wall=$((SECONDS - t0))
    python3 - "$name" "$jdk" "$wall" "$rc" "$base" >>"$STRESS_OUT/rows.md" <<'PY'
import json, re, sys
name, jdk, wall, rc, base = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
out = open(base + ".stdout", errors="replace").read()
err = open(base + ".stderr", errors="replace").read()
problems = []
if rc != 0:
    problems.append(f"exit code {rc}")
jni = [l for l in (out + "\n" + err).splitlines()
       if l.startswith(("WARNING in native method:", "WARNING: JNI ", "FATAL ERROR in native method:"))]
if jni:
    problems.append(f"-Xcheck:jni: {jni[0]}")
agent = [l for l in err.splitlines() if l.startswith("jfrctx:")]
summaries = [l for l in agent if l.startswith("jfrctx: samples ")]
others = [l for l in agent if not l.startswith("jfrctx: samples ")]
if others:
    problems.append(f"agent said: {others[0]}")
def num(line, key):
    m = re.search(r"(?:^| )" + key + r"=(\d+)", line)
    return int(m.group(1)) if m else None
c = {}
if len(summaries) != 1:
    problems.append(f"{len(summaries)} summary lines")
else:
    s = summaries[0]
    for k in ["received", "with_context", "without_context", "unknown", "dropped", "contexts",
              "threads", "lost_entries"]:
        c[k] = num(s, k)
    m = re.search(r"unknown=\d+ \(([^)]*)\)", s)
    c["reasons"] = m.group(1) if m else ""
    if None in [c[k] for k in ["received", "with_context", "without_context", "unknown", "dropped"]]:
        problems.append("summary not parsed")
    elif c["received"] != c["with_context"] + c["without_context"] + c["unknown"] + c["dropped"]:
        problems.append("summary does not add up")
lines = 0
try:
    with open(base + ".jsonl", errors="replace") as f:
        for i, l in enumerate(f, 1):
            if l.strip():
                json.loads(l)
                lines += 1
except FileNotFoundError:
    problems.append("no JSON-lines file")
except ValueError as e:
    problems.append(f"line {i} does not parse: {e}")
if c.get("received") is not None and lines != c["received"]:
    problems.append(f"file has {lines} lines, summary says received={c['received']}")
app = {}
for l in reversed(out.splitlines()):
    try:
        v = json.loads(l)
        if isinstance(v, dict):
            app = v
            break
    except ValueError:
        pass
rss = []
for l in open(base + ".rss.csv").read().splitlines()[1:]:
    t, kb = l.split(",")
    rss.append((int(t), int(kb)))
def mb(kb):
    return f"{kb / 1024:.0f}"
if rss:
    warm = [kb for t, kb in rss if t >= 2] or [rss[0][1]]
    rss_text = f"{mb(warm[0])} / {mb(max(kb for _, kb in rss))} / {mb(rss[-1][1])}"
else:
    rss_text = "n/a"
work = ""
if "switches" in app:
    work = f"{app.get('threads', '')} threads, {app['switches']:,} switches in {app.get('elapsed_ms', 0) / 1000:.1f} s"
elif isinstance(app.get("phases"), dict):
    work = f"{sum(app['phases'].values()):,} context phases in {app.get('elapsed_ms', 0) / 1000:.1f} s"
verdict = "ok" if not problems else "FAIL: " + "; ".join(problems)
g = lambda k: "" if c.get(k) is None else f"{c[k]:,}"
unknown = g("unknown") + (f" ({c['reasons']})" if c.get("reasons") else "")
print(f"| {name} | {jdk} | {wall} | {work} | {rc} | {g('received')} | {g('with_context')} | "
      f"{g('without_context')} | {unknown} | {g('dropped')} | {g('lost_entries')} | "
      f"{g('threads')} | {rss_text} | {verdict} |")
with open(base + ".result", "w") as f:
    f.write(verdict + "\n")
PY
    local verdict
    verdict="$(cat "$base.result")"
    stress_say "$name: $verdict"
    [ "$verdict" = ok ]
}

stress_table_header() {
    echo "| case | JDK | wall s | workload | exit | received | with_context | without_context | unknown | dropped | lost transitions | threads | RSS MB after 2 s / peak / end | verdict |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
}

# stress_publish SECTION FILE: replaces the text between <!-- SECTION:begin --> and
# <!-- SECTION:end --> in bench/stress.md by FILE's content (appends the section when absent).
stress_publish() {
    python3 - "$1" "$2" "$_stress_root/bench/stress.md" <<'PY'
import os, sys
section, src, dest = sys.argv[1:4]
body = open(src).read().rstrip("\n") + "\n"
begin, end = f"<!-- {section}:begin -->", f"<!-- {section}:end -->"
text = open(dest).read() if os.path.exists(dest) else "# Stress and soak results\n"
if begin in text and end in text:
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    text = head + begin + "\n" + body + end + tail
else:
    text = text.rstrip("\n") + "\n\n" + begin + "\n" + body + end + "\n"
open(dest, "w").write(text)
PY
}

if [ "${1:-}" = "--lib" ]; then
    return 0 2>/dev/null || exit 0
fi

# ---- main ------------------------------------------------------------------------------------

smoke=0
case "${1:-}" in
    --smoke) smoke=1 ;;
    "") ;;
    *) echo "usage: scripts/stress.sh [--smoke]" >&2; exit 2 ;;
esac

stress_setup "$_stress_root/target/stress" || exit 1
rm -f "$STRESS_OUT/rows.md"
failed=0
if [ "$smoke" = 1 ]; then
    run_case switch 17 120 period=1ms gt.Stress switch 8 8 || failed=1
    run_case platform 17 180 period=1ms gt.Stress platform 10000 64 || failed=1
    run_case virtual-21 21 180 period=1ms gt.Stress virtual 10000 || failed=1
else
    run_case switch 17 240 period=1ms gt.Stress switch 8 60 || failed=1
    run_case platform 17 900 period=1ms gt.Stress platform 100000 64 || failed=1
    run_case virtual-21 21 900 period=1ms gt.Stress virtual 100000 || failed=1
    run_case virtual-25 25 900 period=1ms gt.Stress virtual 100000 || failed=1
fi

report="$STRESS_OUT/stress.md"
{
    if [ "$smoke" = 1 ]; then echo "Smoke run (short versions), $(date -u '+%Y-%m-%d %H:%M UTC')."; else
        echo "Full run, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(uname -r)."; fi
    echo
    stress_table_header
    cat "$STRESS_OUT/rows.md"
} >"$report"
cat "$report"
if [ "$smoke" = 0 ]; then
    stress_publish stress "$report"
    stress_say "results written to bench/stress.md"
fi
if [ "$failed" = 0 ]; then
    stress_say "all cases passed"
else
    stress_say "FAILED (details in $STRESS_OUT)"
fi
exit "$failed"
