#!/usr/bin/env bash
# pyroscope-e2e.sh — push the demo's profiles to a real Grafana Pyroscope and compare what the
# server stored with the JSON lines of the same run.
#
#   scripts/pyroscope-e2e.sh PYROSCOPE_BINARY [SECONDS]     (default 40)
#
# 1. Starts PYROSCOPE_BINARY (single binary, -target=all, filesystem storage in a temporary
#    directory) on 127.0.0.1 (ports E2E_HTTP_PORT=24040, E2E_GRPC_PORT=29095,
#    E2E_GOSSIP_PORT=27946) and waits until /ready answers `ready`.
# 2. Runs scripts/demo.sh SECONDS with push=http://127.0.0.1:PORT,push_app=APP (APP unique per
#    run), then DemoService again under the agent and ends it with SIGTERM after SECONDS/2 s
#    (APP-sigterm): the last profile must be pushed at exit in both cases.
# 3. For each run: the agent's summary must show every profile pushed (refused=0 failed=0
#    dropped=0); the server's query API (querier.v1.QuerierService/SelectSeries grouped by
#    endpoint, LabelNames, LabelValues, Series) must give per-endpoint sample totals equal to
#    the JSON lines', `request` (one value per request) must not be a label, and the number of
#    series must stay within what the label budget allows.
#
# Needs curl and jq. Prints the comparison tables; exits non-zero on any difference.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

die() { echo "pyroscope-e2e.sh: $*" >&2; exit 1; }

binary="${1:-}"
seconds="${2:-40}"
[ -n "$binary" ] || die "usage: scripts/pyroscope-e2e.sh PYROSCOPE_BINARY [SECONDS]"
[ -x "$binary" ] || die "$binary is not an executable"
[[ "$seconds" =~ ^[0-9]+$ ]] && [ "$seconds" -ge 10 ] || die "SECONDS must be a number >= 10"
command -v curl >/dev/null || die "curl is needed"
command -v jq >/dev/null || die "jq is needed"

port="${E2E_HTTP_PORT:-24040}"
grpc="${E2E_GRPC_PORT:-29095}"
gossip="${E2E_GOSSIP_PORT:-27946}"
base="http://127.0.0.1:$port"
data="$(mktemp -d)"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$data"
}
trap cleanup EXIT

# ---- 1. the server ------------------------------------------------------------------------------
if curl -s -o /dev/null "$base/ready"; then
    die "something already listens on 127.0.0.1:$port (set E2E_HTTP_PORT)"
fi
L=127.0.0.1
(
    cd "$data"
    exec "$binary" -target=all \
        -server.http-listen-address=$L -server.http-listen-port="$port" \
        -server.grpc-listen-address=$L -server.grpc-listen-port="$grpc" \
        -memberlist.bind-addr=$L -memberlist.advertise-addr=$L -memberlist.bind-port="$gossip" \
        -ingester.lifecycler.addr=$L -distributor.ring.instance-addr=$L \
        -compactor.ring.instance-addr=$L -overrides-exporter.ring.instance-addr=$L \
        -query-frontend.instance-addr=$L -query-scheduler.ring.instance-addr=$L \
        -store-gateway.sharding-ring.instance-addr=$L \
        -pyroscopedb.data-path="$data/pyroscopedb" -storage.backend=filesystem \
        -storage.filesystem.dir="$data/shared" -self-profiling.disable-push=true -log.level=warn
) >"$data/server.log" 2>&1 &
server_pid=$!
echo "pyroscope-e2e.sh: started $("$binary" -version 2>/dev/null | head -n 1 || echo "$binary") on $base (pid $server_pid)"
for _ in $(seq 1 120); do
    [ "$(curl -s "$base/ready" || true)" = "ready" ] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$data/server.log" >&2; die "the server exited"; }
    sleep 1
done
[ "$(curl -s "$base/ready" || true)" = "ready" ] || die "the server is not ready after 120 s"
echo "pyroscope-e2e.sh: server ready"

query() { # METHOD JSON
    curl -sf -X POST -H 'Content-Type: application/json' "$base/querier.v1.QuerierService/$1" -d "$2"
}

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Compares one run: APP, its JSON lines, its agent log.
check() {
    local app="$1" jsonl="$2" log="$3"
    echo
    echo "== $app"
    local line
    line="$(grep '^jfrctx: samples' "$log" | tail -n 1)" || true
    [ -n "$line" ] || { fail "$app: no agent summary in $log"; return; }
    local push="${line#*; push }"
    echo "agent: ${push%%; cardinality*}"

    n() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<" $push"; }
    local profiles pushed refused failed dropped
    profiles="$(n profiles)"; pushed="$(n pushed)"; refused="$(n refused)"
    failed="$(n failed)"; dropped="$(n dropped)"
    if [ -z "$profiles" ] || [ "$profiles" -lt 2 ] || [ "$pushed" != "$profiles" ] \
        || [ "$refused$failed$dropped" != "000" ]; then
        fail "$app: not every interval was accepted"
    else
        echo "every interval accepted: $pushed of $profiles profiles"
    fi
    grep '^jfrctx: warning: push' "$log" || true

    local end start type body
    end=$(( $(date +%s) * 1000 + 60000 ))
    start=$(( end - 3600000 ))
    type="process_cpu:samples:count:cpu:nanoseconds"
    local selector="{service_name=\\\"$app\\\"}"
    body="{\"profileTypeID\":\"$type\",\"labelSelector\":\"$selector\",\"start\":$start,\"end\":$end,\"groupBy\":[\"endpoint\"],\"step\":3600}"
    local server json
    server="$(query SelectSeries "$body" | jq -r '.series[]? | [((.labels // []) | map(select(.name=="endpoint")) | .[0].value // "(none)"), ([.points[].value | tonumber] | add)] | @tsv' | sort)"
    json="$(jq -r '((.context | objects | .endpoint) // "(none)")' "$jsonl" | sort | uniq -c | awk '{print $2 "\t" $1}' | sort)"
    printf '%-12s %10s %10s\n' endpoint pyroscope jsonl
    join -t $'\t' -a1 -a2 -e 0 -o 0,1.2,2.2 <(echo "$server") <(echo "$json") \
        | while IFS=$'\t' read -r e a b; do printf '%-12s %10s %10s\n' "$e" "$a" "$b"; done
    if [ "$server" = "$json" ]; then
        echo "per-endpoint totals equal: yes"
    else
        fail "$app: per-endpoint totals differ"
    fi

    local names
    names="$(query LabelNames "{\"matchers\":[\"$selector\"],\"start\":$start,\"end\":$end}" | jq -r '.names | join(",")')"
    echo "label names: $names"
    local values
    values="$(query LabelValues "{\"name\":\"endpoint\",\"matchers\":[\"$selector\"],\"start\":$start,\"end\":$end}" | jq -r '.names | join(",")')"
    echo "endpoint values: $values"
    case ",$names," in
        *,endpoint,*) ;;
        *) fail "$app: endpoint is not a label" ;;
    esac
    case ",$names," in
        *,request,*) fail "$app: request (one value per request) became a label" ;;
    esac
    local series
    series="$(query Series "{\"matchers\":[\"{service_name=\\\"$app\\\",__profile_type__=\\\"$type\\\"}\"],\"start\":$start,\"end\":$end}" | jq '.labelsSet | length')"
    # endpoint (4 values + none) x thread (at most the budget, 32).
    echo "series of $type: $series (bound: 5 x 32 = 160)"
    [ "$series" -le 160 ] || fail "$app: $series series"
}

# ---- 2. the runs --------------------------------------------------------------------------------
app="jfrctx-e2e-$(date +%s)"
export JFRCTX_DEMO_AGENT_OPTIONS="period=10ms,push=$base,push_app=$app"
bash scripts/demo.sh "$seconds" >"$data/demo.out" 2>&1 || { cat "$data/demo.out"; die "scripts/demo.sh failed"; }
check "$app" out/demo/samples.jsonl out/demo/service.log

# SIGTERM: the demo's classes (compiled by demo.sh) under the agent, ended by the signal.
source scripts/jdks.sh >/dev/null 2>&1 || true
java_home="${JFRCTX_DEMO_JDK:-${JFRCTX_JDK17:-}}"
[ -x "$java_home/bin/java" ] || die "no JDK 17 (scripts/jdks.sh)"
term="$data/sigterm"
mkdir -p "$term"
"$java_home/bin/java" \
    "-agentpath:$root/target/release/libjfrctx.so=sink=jsonl:$term/samples.jsonl,period=10ms,push=$base,push_app=$app-sigterm" \
    -cp "$root/target/jfrctx.jar:$root/target/demo-classes" \
    dev.jfrctx.demo.DemoService $((seconds * 4)) >"$term/service.log" 2>&1 &
java_pid=$!
sleep $((seconds / 2))
kill -TERM "$java_pid"
rc=0
wait "$java_pid" || rc=$?
echo
echo "(DemoService ended by SIGTERM after $((seconds / 2)) s, status $rc)"
check "$app-sigterm" "$term/samples.jsonl" "$term/service.log"

echo
if [ "$failures" -eq 0 ]; then
    echo "pyroscope-e2e.sh: PASS"
else
    echo "pyroscope-e2e.sh: $failures check(s) FAILED"
    exit 1
fi
