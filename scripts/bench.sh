#!/usr/bin/env bash
# bench.sh — every jfrctx benchmark in one run (see bench/README.md for what each one measures).
#
#   scripts/bench.sh            full run: JMH hot path (JDK 17 and 25), application overhead
#                               (no JFR / JFR alone / jfrctx, interleaved rounds), criterion join
#                               throughput, loom model check of the ring, server benchmark
#                               (embedded Tomcat under load, bench/server), an idle JVM's cost
#                               (bench/idle). About 50 minutes.
#   scripts/bench.sh --smoke    each harness for a few seconds (CI): < 3 minutes, no loom; the
#                               server benchmark only JFR alone, jfrctx {endpoint, request} and
#                               jfrctx-ab (phases of 200 ms) on JDK 17, 1 s warm-up + 2 s each
#                               (≈ 30 s), no peer.
#
# Other options: --no-jmh --no-overhead --no-criterion --no-loom --no-server --no-idle,
# --jdks "17 25" (JMH JDKs), --rounds N (overhead and server rounds), --out DIR (default
# bench/results/<timestamp>[-smoke]), --server-only (= every --no-* but the server),
# --server-configs LIST, --server-setups "17:platform 21:virtual" (see bench/server/run.py),
# --server-warmup S and --server-measure S (seconds per server JVM: 10 and 15 by default),
# --server-period MS (ms between execution samples, every profiler: 10 by default),
# --server-time-contexts (time the filter's context on the request thread, bench/server),
# --server-phase-ms MS (phase length of the A/B configurations *-ab: 2000 by default, 200 in
# --smoke).
# Environment: OVERHEAD_AGENT_OPTS (extra agent options for the overhead run, default
# ring=4096), OVERHEAD_WORK (compute steps per context, default 6500 ≈ 17 µs of CPU here).
#
# Builds with scripts/build.sh into target/ (or, when CARGO_TARGET_DIR points elsewhere, with
# `cargo build --release` there). Raw results go to the output directory (bench/results/ is
# gitignored; bench/results/latest points to the last run); the summary table is printed at
# the end and saved as summary.txt. Exits non-zero when a harness fails to run (a missed
# performance target is reported, not a failure).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

t_start=$SECONDS
die() { echo "bench.sh: $*" >&2; exit 1; }
say() { echo "==> [$((SECONDS - t_start)) s] $*" >&2; }

smoke=0
run_jmh=1
run_overhead=1
run_criterion=1
run_loom=1
run_server=1
run_idle=1
server_configs=""
server_setups=""
server_warmup_opt=""
server_measure_opt=""
server_period=10
server_time=()
server_phase=""
jdks=""
rounds=""
out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --smoke) smoke=1 ;;
        --no-jmh) run_jmh=0 ;;
        --no-overhead) run_overhead=0 ;;
        --no-criterion) run_criterion=0 ;;
        --no-loom) run_loom=0 ;;
        --no-server) run_server=0 ;;
        --no-idle) run_idle=0 ;;
        --server-only) run_jmh=0; run_overhead=0; run_criterion=0; run_loom=0; run_idle=0 ;;
        --server-configs) server_configs="$2"; shift ;;
        --server-setups) server_setups="$2"; shift ;;
        --server-warmup) server_warmup_opt="$2"; shift ;;
        --server-measure) server_measure_opt="$2"; shift ;;
        --server-period) server_period="$2"; shift ;;
        --server-time-contexts) server_time=(--time-contexts) ;;
        --server-phase-ms) server_phase="$2"; shift ;;
        --jdks) jdks="$2"; shift ;;
        --rounds) rounds="$2"; shift ;;
        --out) out="$2"; shift ;;
        -h|--help) sed -n '2,27p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
    shift
done
if [ "$smoke" = 1 ]; then
    run_loom=0
    jdks="${jdks:-17}"
    rounds="${rounds:-1}"
    warmup_s=1
    measure_s=2
    server_configs="${server_configs:-jfr,jfrctx-request,jfrctx-ab}"
    server_setups="${server_setups:-17:platform}"
    server_warmup=1
    server_measure=2
    server_phase_default=200
else
    jdks="${jdks:-17 25}"
    rounds="${rounds:-3}"
    warmup_s=5
    measure_s=15
    server_configs="${server_configs:-none,jfr,jfrctx-off,jfrctx-snapshot,jfrctx-endpoint,jfrctx-request,jfrctx-request-all,pyroscope-off,pyroscope-request}"
    server_setups="${server_setups:-17:platform 21:virtual}"
    server_warmup=10
    server_measure=15
    server_phase_default=2000
fi
server_phase="${server_phase:-$server_phase_default}"
server_warmup="${server_warmup_opt:-$server_warmup}"
server_measure="${server_measure_opt:-$server_measure}"
work="${OVERHEAD_WORK:-6500}"
agent_opts="${OVERHEAD_AGENT_OPTS:-ring=4096}"

stamp="$(date +%Y%m%d-%H%M%S)"
if [ -z "$out" ]; then
    out="$root/bench/results/$stamp"
    [ "$smoke" = 1 ] && out="$out-smoke"
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"
ln -sfn "$out" "$root/bench/results/latest" 2>/dev/null || true
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

# ---- toolchain and build ---------------------------------------------------------------------
say "toolchain (scripts/jdks.sh)"
exports="$(bash scripts/jdks.sh)" || die "scripts/jdks.sh failed"
eval "$exports"
jdk17="${JFRCTX_JDK17:?}"

tgt="${CARGO_TARGET_DIR:-$root/target}"
mkdir -p "$tgt"
tgt="$(cd "$tgt" && pwd)"
if [ "$tgt" = "$root/target" ]; then
    say "build (scripts/build.sh)"
    bash scripts/build.sh || die "scripts/build.sh failed"
else
    say "build (cargo build --release into CARGO_TARGET_DIR=$tgt)"
    cargo build --release --quiet || die "cargo build --release failed"
fi
agent="$tgt/release/libjfrctx.so"
[ -f "$agent" ] || die "no agent at $agent"

# ---- machine description ---------------------------------------------------------------------
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "mode: $([ "$smoke" = 1 ] && echo smoke || echo full)"
    echo "nproc: $(nproc)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "kernel: $(uname -sr)"
    echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo '?')"
    echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    for v in JFRCTX_JDK17 JFRCTX_JDK21 JFRCTX_JDK25; do
        home="${!v:-}"
        [ -n "$home" ] && echo "$v: $("$home/bin/java" -version 2>&1 | head -2 | tail -1)"
    done
    echo "rustc: $(rustc --version)"
    echo "git: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$root" diff --quiet 2>/dev/null || echo ' (dirty)')"
} > "$out/machine.txt"
cat "$out/machine.txt" >&2

java_of() {
    case "$1" in
        17) echo "$jdk17/bin/java" ;;
        21) echo "${JFRCTX_JDK21:-}/bin/java" ;;
        25) echo "${JFRCTX_JDK25:-}/bin/java" ;;
        *) die "unknown JDK $1 (17, 21 or 25)" ;;
    esac
}

failures=()

# ---- 1. JMH: the hot path --------------------------------------------------------------------
if [ "$run_jmh" = 1 ]; then
    say "JNI baseline library (gcc)"
    gcc -O2 -shared -fPIC -I"$jdk17/include" -I"$jdk17/include/linux" \
        -o bench/jni/libswitch.so bench/jni/switch.c || die "gcc failed on bench/jni/switch.c"
    say "JMH benchmarks jar (Maven)"
    command -v mvn >/dev/null 2>&1 || die "mvn not found (apt-get install maven)"
    # Offline first (after the first build everything is in ~/.m2), online when something is missing.
    if ! (cd bench/jmh && JAVA_HOME="$jdk17" mvn -B -q -o package >"$out/mvn.log" 2>&1); then
        (cd bench/jmh && JAVA_HOME="$jdk17" mvn -B -q package >"$out/mvn.log" 2>&1) \
            || { tail -n 30 "$out/mvn.log" >&2; die "mvn package failed in bench/jmh (log: $out/mvn.log)"; }
    fi
    jar="bench/jmh/target/benchmarks.jar"
    for v in $jdks; do
        java="$(java_of "$v")"
        if [ ! -x "$java" ]; then
            echo "bench.sh: JDK $v not available, JMH not run on it" | tee -a "$out/notes.txt" >&2
            continue
        fi
        say "JMH on JDK $v"
        args=(-out "$out" -label "jdk$v" -agent "$agent" -jni "$root/bench/jni/libswitch.so"
            -javaagent "$root/target/jfrctx-agent.jar")
        [ "$smoke" = 1 ] && args+=(-smoke)
        # Run from the output directory: a crashing fork leaves its hs_err file there.
        if ! (cd "$out" && "$java" -jar "$root/$jar" "${args[@]}" >"$out/jmh-jdk$v.log" 2>&1); then
            tail -n 30 "$out/jmh-jdk$v.log" >&2
            failures+=("JMH on JDK $v")
        fi
        [ -f "$out/jmh-jdk$v.tsv" ] || failures+=("JMH on JDK $v: no results")
    done
fi

# ---- 2. application overhead -----------------------------------------------------------------
if [ "$run_overhead" = 1 ]; then
    say "overhead workload (javac)"
    classes="$tgt/bench-overhead-classes"
    rm -rf "$classes"
    mkdir -p "$classes"
    mapfile -t sources < <(find java/src/main/java bench/overhead/src -name '*.java' | sort)
    "$jdk17/bin/javac" --release 17 -encoding UTF-8 -d "$classes" "${sources[@]}" \
        || die "javac failed on bench/overhead"
    : > "$out/overhead.jsonl"
    java="$jdk17/bin/java"
    for r in $(seq 1 "$rounds"); do
        for cfg in none jfr jfrctx; do
            case "$cfg" in
                none) opts=() ;;
                jfr) opts=("-XX:StartFlightRecording=settings=$root/bench/overhead/execution-sample.jfc,filename=$out/overhead-r$r.jfr") ;;
                jfrctx) opts=("-agentpath:$agent=sink=jsonl:$out/overhead-r$r.jsonl,period=20ms${agent_opts:+,$agent_opts}") ;;
            esac
            say "overhead round $r/$rounds: $cfg (${warmup_s}s warm-up, ${measure_s}s measured)"
            if ! (cd "$out" && "$java" -Xms512m -Xmx512m -Xlog:disable -Xlog:all=warning:stderr -Xlog:jfr+startup=error "${opts[@]}" \
                -cp "$classes" dev.jfrctx.bench.overhead.Workload "$cfg" 2 "$warmup_s" "$measure_s" "$work" \
                >>"$out/overhead.jsonl" 2>"$out/overhead-$cfg-r$r.err"); then
                tail -n 20 "$out/overhead-$cfg-r$r.err" >&2
                failures+=("overhead $cfg round $r")
            fi
        done
    done
    rm -f "$out"/overhead-r*.jfr "$out"/overhead-r*.jsonl  # large; the summaries are kept
fi

# ---- 3. criterion: join throughput -----------------------------------------------------------
if [ "$run_criterion" = 1 ]; then
    say "criterion: benches/join.rs"
    if [ "$smoke" = 1 ]; then
        crit=(--warm-up-time 0.3 --measurement-time 0.6 --sample-size 10)
    else
        crit=(--warm-up-time 2 --measurement-time 5 --sample-size 20)
    fi
    rm -rf "$tgt/criterion/decide" "$tgt/criterion/pipeline"
    if CARGO_TARGET_DIR="$tgt" cargo bench --quiet --bench join -- "${crit[@]}" >"$out/criterion.log" 2>&1; then
        mkdir -p "$out/criterion"
        cp -r "$tgt/criterion/decide" "$tgt/criterion/pipeline" "$out/criterion/"
    else
        tail -n 30 "$out/criterion.log" >&2
        failures+=("criterion")
    fi
fi

# ---- 4. loom model check of the ring and spare-queue protocols ---------------------------------
if [ "$run_loom" = 1 ]; then
    say "loom: tests/loom_ring.rs, tests/loom_spares.rs (separate target dir: RUSTFLAGS changes every artifact)"
    if ! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="$tgt/loom" \
        cargo test --release --test loom_ring --test loom_spares -- --test-threads 1 --nocapture >"$out/loom.log" 2>&1; then
        tail -n 30 "$out/loom.log" >&2
        failures+=("loom")
    fi
fi

# ---- 5. server benchmark: embedded Tomcat under load -----------------------------------------
if [ "$run_server" = 1 ]; then
    say "server benchmark (javac; Tomcat via scripts/tomcat.sh)"
    tomcat="$(bash scripts/tomcat.sh)" || die "scripts/tomcat.sh failed"
    sclasses="$tgt/bench-server-classes"
    rm -rf "$sclasses" "$sclasses-pyroscope" "$sclasses-facade"
    mkdir -p "$sclasses" "$sclasses-pyroscope" "$sclasses-facade"
    # The facade from source (as for the overhead workload): same classes as target/jfrctx.jar.
    mapfile -t facade < <(find java/src/main/java -name '*.java' | sort)
    "$jdk17/bin/javac" --release 17 -encoding UTF-8 -d "$sclasses-facade" "${facade[@]}" \
        || die "javac failed on the facade"
    "$jdk17/bin/javac" --release 17 -encoding UTF-8 -d "$sclasses" -cp "$tomcat/*:$sclasses-facade" \
        bench/server/src/dev/jfrctx/bench/server/*.java || die "javac failed on bench/server"
    pyro_args=()
    if [[ ",$server_configs," == *",pyroscope"* ]]; then
        # The peer: Pyroscope's Java agent from Maven Central (offline first, as for JMH).
        pyro_version=2.9.2
        pyro_jar="$HOME/.m2/repository/io/pyroscope/agent/$pyro_version/agent-$pyro_version.jar"
        get=(org.apache.maven.plugins:maven-dependency-plugin:3.6.1:get "-Dartifact=io.pyroscope:agent:$pyro_version" -Dtransitive=false)
        [ -f "$pyro_jar" ] || mvn -B -q -o "${get[@]}" >"$out/pyroscope-mvn.log" 2>&1 \
            || mvn -B -q "${get[@]}" >"$out/pyroscope-mvn.log" 2>&1 \
            || die "cannot fetch io.pyroscope:agent:$pyro_version from Maven Central (log: $out/pyroscope-mvn.log)"
        "$jdk17/bin/javac" --release 17 -encoding UTF-8 -d "$sclasses-pyroscope" -cp "$sclasses:$pyro_jar" \
            bench/server/pyroscope/dev/jfrctx/bench/server/*.java || die "javac failed on bench/server/pyroscope"
        pyro_args=(--pyroscope-jar "$pyro_jar" --pyroscope-classes "$sclasses-pyroscope")
    fi
    otel_args=()
    if [[ ",$server_configs," == *",otel"* ]]; then
        # The OpenTelemetry Java agent (scripts/otel.sh, Maven Central, cached) and the bridge.
        otel_dir="$(bash scripts/otel.sh)" || die "scripts/otel.sh failed"
        otel_jar="$(find "$otel_dir" -maxdepth 1 -name 'opentelemetry-javaagent-*.jar' | head -n 1)"
        [ -f target/jfrctx-otel.jar ] || die "no target/jfrctx-otel.jar (scripts/build.sh builds it)"
        otel_args=(--otel-agent "$otel_jar" --otel-extension target/jfrctx-otel.jar)
    fi
    say "server benchmark: $server_setups; $server_configs; $rounds round(s) of ${server_warmup}s warm-up + ${server_measure}s, samples every ${server_period} ms"
    if ! python3 bench/server/run.py --classes "$sclasses" --tomcat "$tomcat" --agent "$agent" \
        --jar "$sclasses-facade" --out "$out" --rounds "$rounds" --warmup "$server_warmup" \
        --measure "$server_measure" --period "$server_period" --phase-ms "$server_phase" \
        --setups "$server_setups" --configs "$server_configs" \
        "${pyro_args[@]}" "${otel_args[@]}" "${server_time[@]}" >"$out/server.log" 2>&1; then
        tail -n 20 "$out/server.log" >&2
        failures+=("server benchmark")
    fi
fi

# ---- 6. an idle JVM: none / JFR alone / jfrctx ----------------------------------------------
if [ "$run_idle" = 1 ]; then
    idle_args=(--rounds "${rounds:-2}")
    [ "$smoke" = 1 ] && idle_args=(--rounds 1 --seconds 2 --warmup 2)
    say "idle JVM (bench/idle): ${idle_args[*]}"
    if ! python3 bench/idle/run.py --agent "$agent" "${idle_args[@]}" >"$out/idle.log" 2>&1; then
        tail -n 20 "$out/idle.log" >&2
        failures+=("idle JVM")
    fi
fi

# ---- summary ---------------------------------------------------------------------------------
echo "loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/machine.txt"
echo "elapsed: $((SECONDS - t_start)) s" >> "$out/machine.txt"
python3 bench/summarize.py "$out" | tee "$out/summary.txt"
if [ -f "$out/server-summary.txt" ]; then
    { echo; echo "5. server benchmark (bench/server): embedded Tomcat 10.1, 8 connections, 5 endpoints"
      cat "$out/server-summary.txt"; } | tee -a "$out/summary.txt"
fi
if [ -f "$out/idle.log" ]; then
    { echo; echo "6. an idle JVM (bench/idle)"; grep '^median' "$out/idle.log"; } \
        | tee -a "$out/summary.txt"
fi
if [ "${#failures[@]}" -gt 0 ]; then
    printf 'bench.sh: FAILED: %s\n' "${failures[@]}" >&2
    exit 1
fi
echo "bench.sh: done in $((SECONDS - t_start)) s; raw results in $out" >&2
