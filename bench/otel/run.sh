#!/usr/bin/env bash
# run.sh — cost of an OTel Context attach/detach with and without the jfrctx bridge (SDK mode,
# JfrctxOtel.install), with the agent loaded: ns (wall and the thread's CPU) and bytes per
# attach+detach, and the agent's `contexts=` after millions of attaches; then per request-like
# round with two new spans (root + child: start, attach, detach, end). Needs scripts/build.sh
# first.
#   bash bench/otel/run.sh [ROUNDS]      (default 5 000 000 rounds = 10 M attaches per rep;
#                                         ROUNDS/10 requests per rep)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rounds="${1:-5000000}"
java_home="${JFRCTX_JDK17:-${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}}"
otel="$(bash "$root/scripts/otel.sh")"
cp="$(find "$otel" -maxdepth 1 -name '*.jar' ! -name 'opentelemetry-javaagent-*' | sort | paste -sd: -)"
[ -f "$root/target/jfrctx-otel.jar" ] || { echo "run.sh: build first (scripts/build.sh)" >&2; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$java_home/bin/javac" -encoding UTF-8 -d "$out" -cp "$cp:$root/target/jfrctx-otel.jar" "$root/bench/otel/AttachBench.java"
for what in attach spans; do
    for mode in plain bridge; do
        "$java_home/bin/java" -agentpath:"$root/target/release/libjfrctx.so=sink=jsonl:$out/$mode.jsonl" \
            -cp "$out:$cp:$root/target/jfrctx-otel.jar" AttachBench "$mode" "$rounds" "$what" 2>&1 \
            | grep -E "rep|contexts=" | sed -e 's/; cpu_sampler.*//'
    done
done
