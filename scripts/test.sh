#!/usr/bin/env bash
# test.sh — the one test command (CI runs it through .ci/run).
#
#   1. scripts/jdks.sh (sourced): installs what is missing, exports JFRCTX_JDK17/21/25
#   2. scripts/build.sh: agent, report tool, facade jar
#   3. cargo fmt --all -- --check
#   4. cargo clippy --all-targets -- -D warnings
#   5. scripts/tomcat.sh (embedded Tomcat 10.1 from Maven Central, cached), scripts/jmc.sh (JDK
#      Mission Control's parser, org.openjdk.jmc:flightrecorder, cached) and scripts/otel.sh (the
#      OTel Java agent and SDK jars, cached), then cargo test: unit tests and the integration
#      tests, one binary tests/it with a module per concern (real JVMs on JDK 17, 21, 25;
#      app_server runs the servlet example in that Tomcat, otel a service in it under the OTel
#      Java agent, jfr_file reads the jfr sink's files with JMC's parser)
#   6. valgrind memcheck over the unit tests of the Rust cores that touch raw memory or carry the
#      join (context::, join::, batch::, clock::, sink::jsonl), one test at a time (valgrind
#      serialises threads) and without the slowest concurrent ring test: ~80 s. Miri and the
#      sanitizers need a nightly toolchain, which cannot be installed here (only crates.io is
#      reachable), so valgrind stands in.
#   7. Gradle Java tests (cd java && gradle --offline --no-daemon -q cleanTest test), when
#      java/build.gradle exists (cleanTest: always run them, so that their counts are printed);
#      they include integration tests that start JVMs with the agent (java/src/test/.../it)
#   8. scripts/stress.sh --smoke and scripts/soak.sh --smoke (~1.5 min together)
#
# Stops at the first failing step with a non-zero status. Always ends with one line
# `N passed, N failed` (cargo's and Gradle's test counts summed over what ran).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export CARGO_TARGET_DIR="$root/target"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

passed=0
failed=0
logs="$root/target/test-logs"
mkdir -p "$logs"

summary() { echo "$passed passed, $failed failed"; }

fail() {
    echo "test.sh: FAILED: $*" >&2
    summary
    exit 1
}

step() { echo "==> $*" >&2; }

t0=$SECONDS

step "toolchain (scripts/jdks.sh)"
# shellcheck source=scripts/jdks.sh
source scripts/jdks.sh || fail "scripts/jdks.sh"

step "build (scripts/build.sh)"
bash scripts/build.sh || fail "scripts/build.sh"

step "cargo fmt --check"
cargo fmt --all -- --check --color never || fail "cargo fmt --all -- --check (run: cargo fmt --all)"

step "cargo clippy"
cargo clippy --quiet --all-targets -- -D warnings || fail "cargo clippy --all-targets -- -D warnings"

# Adds the counts of every `test result: ok. N passed; M failed; ...` line in $1.
count_cargo() {
    local p f
    read -r p f < <(awk '
        /^test result: / {
            for (i = 1; i <= NF; i++) {
                if ($(i) ~ /^passed;?$/) p += $(i - 1)
                if ($(i) ~ /^failed;?$/) f += $(i - 1)
            }
        }
        END { print p + 0, f + 0 }' "$1")
    passed=$((passed + p))
    failed=$((failed + f))
}

step "Tomcat for the app_server and otel tests (scripts/tomcat.sh)"
# Maven Central, once (then the cache); fails with one line when offline.
bash scripts/tomcat.sh >/dev/null || fail "scripts/tomcat.sh"

step "JMC's parser for the jfr_file tests (scripts/jmc.sh)"
# Maven Central, once (then the cache); fails with one line when offline.
bash scripts/jmc.sh >/dev/null || fail "scripts/jmc.sh"
step "OpenTelemetry Java agent and SDK jars for the otel tests (scripts/otel.sh)"
# Maven Central, once (then the cache; scripts/build.sh already asked for them); one line when offline.
bash scripts/otel.sh >/dev/null || fail "scripts/otel.sh"

step "cargo test"
set +e
cargo test -- --show-output 2>&1 | tee "$logs/cargo-test.log"
rc=${PIPESTATUS[0]}
set -e
count_cargo "$logs/cargo-test.log"
[ "$rc" = 0 ] || fail "cargo test (log: $logs/cargo-test.log)"

step "valgrind memcheck (Rust cores)"
# The concurrent producer/consumer tests are skipped here: valgrind runs one thread at a time, so
# their spin-waits take from seconds to tens of minutes depending on its scheduling. They run
# natively in `cargo test`, and the ring protocol itself is model-checked with loom.
command -v valgrind >/dev/null 2>&1 || fail "valgrind not found (apt-get install valgrind)"
unit_bin="$(cargo test --lib --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["executable"])
' | tail -n 1)"
[ -n "$unit_bin" ] && [ -x "$unit_bin" ] || fail "cannot find the unit-test binary for valgrind"
valgrind --error-exitcode=1 --leak-check=no -q "$unit_bin" --test-threads=1 -q \
    context:: join:: batch:: clock:: sink::jsonl --skip concurrent \
    >"$logs/valgrind.log" 2>&1 || { tail -n 40 "$logs/valgrind.log" >&2; fail "valgrind memcheck (log: $logs/valgrind.log)"; }
grep -E '^test result:' "$logs/valgrind.log" >&2 || true

if [ -f java/build.gradle ]; then
    step "gradle test (java/)"
    command -v gradle >/dev/null 2>&1 || fail "gradle not found (scripts/jdks.sh installs it)"
    set +e
    (cd java && JAVA_HOME="$JFRCTX_JDK17" gradle --offline --no-daemon -q cleanTest test) 2>&1 \
        | tee "$logs/gradle-test.log"
    rc=${PIPESTATUS[0]}
    set -e
    # The build prints its own `N passed, N failed` line.
    counts="$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logs/gradle-test.log" | tail -n 1 || true)"
    if [ -n "$counts" ]; then
        passed=$((passed + $(echo "$counts" | awk '{print $1}')))
        failed=$((failed + $(echo "$counts" | awk '{print $3}')))
    elif [ "$rc" = 0 ]; then
        echo "test.sh: warning: gradle printed no 'N passed, N failed' line" >&2
    fi
    [ "$rc" = 0 ] || fail "gradle test (log: $logs/gradle-test.log)"
else
    echo "test.sh: no java/build.gradle; skipping the Gradle tests" >&2
fi

step "stress smoke (scripts/stress.sh --smoke)"
bash scripts/stress.sh --smoke >"$logs/stress-smoke.log" 2>&1 \
    || { tail -n 30 "$logs/stress-smoke.log" >&2; fail "scripts/stress.sh --smoke (log: $logs/stress-smoke.log)"; }
step "soak smoke (scripts/soak.sh --smoke)"
bash scripts/soak.sh --smoke >"$logs/soak-smoke.log" 2>&1 \
    || { tail -n 30 "$logs/soak-smoke.log" >&2; fail "scripts/soak.sh --smoke (log: $logs/soak-smoke.log)"; }

step "benchmark smoke (scripts/bench.sh --smoke)"
# Each harness for a few seconds (JMH, overhead, criterion): they build and run; the figures of a
# smoke are not targets (bench/README.md has those, from full runs).
bash scripts/bench.sh --smoke >"$logs/bench-smoke.log" 2>&1 \
    || { tail -n 30 "$logs/bench-smoke.log" >&2; fail "scripts/bench.sh --smoke (log: $logs/bench-smoke.log)"; }

echo "test.sh: all steps passed in $((SECONDS - t0)) s" >&2
summary
[ "$failed" = 0 ] || exit 1
