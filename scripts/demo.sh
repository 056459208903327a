#!/usr/bin/env bash
# demo.sh — run the demo HTTP service under the agent and print CPU samples per endpoint.
#
#   scripts/demo.sh [seconds]        (default 15)
#
# Installs what is missing (scripts/jdks.sh), builds (scripts/build.sh), compiles java/demo with
# JDK 17 against target/jfrctx.jar, runs dev.jfrctx.demo.DemoService with
#   -agentpath:target/release/libjfrctx.so=sink=jsonl:out/demo/samples.jsonl
# and prints `jfrctx-report out/demo/samples.jsonl --key endpoint`.
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
rm -f "$out/samples.jsonl" "$out/service.log" "$out/report.txt"
java_home="${JFRCTX_DEMO_JDK:-$JFRCTX_JDK17}"
extra="${JFRCTX_DEMO_AGENT_OPTIONS-period=10ms}"
options="sink=jsonl:$out/samples.jsonl${extra:+,$extra}"

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
echo "  $out/samples.jsonl   every sample with its context (JSON lines)"
echo "  $out/service.log     the service's output, including the agent's summary line"
echo "  $out/report.txt      the table above"
