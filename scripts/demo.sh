#!/usr/bin/env bash
# demo.sh — run the demo HTTP service under the agent, print CPU samples per endpoint, and write
# the same samples as pprof, collapsed stacks and SVG flame graphs (all, and one per endpoint).
#
#   scripts/demo.sh [seconds]        (default 15)
#
# Installs what is missing (scripts/jdks.sh), builds (scripts/build.sh), compiles java/demo with
# JDK 17 against target/jfrctx.jar, runs dev.jfrctx.demo.DemoService with
#   -agentpath:target/release/libjfrctx.so=sink=jsonl:out/demo/samples.jsonl,
#       sink=pprof:out/demo/cpu.pprof,sink=collapsed:out/demo/stacks.collapsed,
#       sink=svg:out/demo/flames,sink=jfr:out/demo/recording.jfr,svg_key=endpoint,
#       collapsed_keys=endpoint
# and prints `jfrctx-report out/demo/samples.jsonl --key endpoint` and the output paths.
#
# Environment: JFRCTX_DEMO_JDK   JDK home to run the service on (default: JDK 17;
#                                e.g. JFRCTX_DEMO_JDK=$JFRCTX_JDK25)
#              JFRCTX_DEMO_AGENT_OPTIONS  agent options appended after the sink
#                                (default period=10ms: enough samples for a 15 s run)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export CARGO_TARGET_DIR="$root/target"

die() { echo "demo.sh: $*" >&2; exit 1; }

seconds="${1:-15}"
[[ "$seconds" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "usage: scripts/demo.sh [seconds]"

# shellcheck source=scripts/jdks.sh
source scripts/jdks.sh || die "scripts/jdks.sh failed"
bash scripts/build.sh || die "scripts/build.sh failed"

classes=target/demo-classes
rm -rf "$classes"
mkdir -p "$classes"
mapfile -t sources < <(find java/demo/src -name '*.java' | sort)
"$JFRCTX_JDK17/bin/javac" --release 17 -g -encoding UTF-8 -cp target/jfrctx.jar -d "$classes" \
    "${sources[@]}" || die "javac failed on java/demo"

out="$root/out/demo"
mkdir -p "$out"
rm -f "$out/samples.jsonl" "$out/service.log" "$out/report.txt" "$out/cpu.pprof" \
    "$out/stacks.collapsed" "$out/recording.jfr"
rm -rf "$out/flames"
java_home="${JFRCTX_DEMO_JDK:-$JFRCTX_JDK17}"
extra="${JFRCTX_DEMO_AGENT_OPTIONS-period=10ms}"
options="sink=jsonl:$out/samples.jsonl,sink=pprof:$out/cpu.pprof"
options+=",sink=collapsed:$out/stacks.collapsed,collapsed_keys=endpoint"
options+=",sink=svg:$out/flames,sink=jfr:$out/recording.jfr,svg_key=endpoint${extra:+,$extra}"

echo "demo.sh: running DemoService for $seconds s on $("$java_home/bin/java" -version 2>&1 | head -n 1)" >&2
set +e
"$java_home/bin/java" \
    "-agentpath:$root/target/release/libjfrctx.so=$options" \
    -cp "$root/target/jfrctx.jar:$root/$classes" \
    dev.jfrctx.demo.DemoService "$seconds" 2>&1 | tee "$out/service.log"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 0 ] || die "DemoService exited with status $rc (log: $out/service.log)"
[ -s "$out/samples.jsonl" ] || die "the agent wrote no samples to $out/samples.jsonl"

echo
echo "CPU samples per endpoint:"
target/release/jfrctx-report "$out/samples.jsonl" --key endpoint | tee "$out/report.txt"
echo
echo "outputs:"
[ -s "$out/flames/index.txt" ] || die "the agent wrote no flame graphs to $out/flames"
show() { printf '  %-50s %s\n' "$1" "$2"; }
show "$out/samples.jsonl" "every sample with its context (JSON lines)"
show "$out/service.log" "the service's output, including the agent's summary line"
show "$out/report.txt" "the table above"
show "$out/cpu.pprof" "pprof, a label per context key (go tool pprof -http=: FILE)"
show "$out/stacks.collapsed" "folded stacks, endpoint as root frame (flamegraph.pl, speedscope)"
show "$out/recording.jfr" "JFR recording, the context on every event (jfr print --events jdk.ExecutionSample FILE; JDK Mission Control)"
# index.txt: FILE, (VALUE,) SAMPLES, CONTEXT, tab-separated.
while IFS=$'\t' read -r file rest; do
    context="${rest##*$'\t'}"
    samples="${rest%$'\t'*}"
    samples="${samples##*$'\t'}"
    show "$out/flames/$file" "flame graph: $context, $samples samples"
done < "$out/flames/index.txt"
echo
grep '^jfrctx: samples' "$out/service.log" || die "no agent summary in $out/service.log"
