#!/usr/bin/env bash
# build.sh — build the agent and the facade jar.
#
#   target/release/libjfrctx.so     the JVMTI agent (-agentpath:...)
#   target/release/jfrctx-report    the JSON-lines report tool
#   target/jfrctx.jar               the facade (dev.jfrctx), javac --release 17
#
# The facade is compiled with JDK 17's javac: $JFRCTX_JDK17, else $JAVA_HOME, else `javac` on
# PATH. Does not install anything: run scripts/jdks.sh first on a fresh machine (scripts/test.sh
# and scripts/demo.sh do).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

die() { echo "build.sh: $*" >&2; exit 1; }

# ---- JDK tools for the facade ---------------------------------------------------------------
jdk_bin=""
for home in "${JFRCTX_JDK17:-}" "${JAVA_HOME:-}"; do
    if [ -n "$home" ] && [ -x "$home/bin/javac" ] && [ -x "$home/bin/jar" ]; then
        jdk_bin="$home/bin/"
        break
    fi
done
if [ -z "$jdk_bin" ]; then
    command -v javac >/dev/null 2>&1 && command -v jar >/dev/null 2>&1 \
        || die "no javac/jar found (set JFRCTX_JDK17 or JAVA_HOME, or run scripts/jdks.sh)"
fi
javac="${jdk_bin}javac"
jar="${jdk_bin}jar"

# ---- Rust: agent cdylib + report tool ------------------------------------------------------
command -v cargo >/dev/null 2>&1 || die "cargo not found on PATH"
cargo build --release --quiet || die "cargo build --release failed"
for f in target/release/libjfrctx.so target/release/jfrctx-report; do
    [ -f "$f" ] || die "cargo build did not produce $f"
done

# ---- facade jar ----------------------------------------------------------------------------
src=java/src/main/java
[ -d "$src" ] || die "no facade sources under $src"
mapfile -t sources < <(find "$src" -name '*.java' | sort)
[ "${#sources[@]}" -gt 0 ] || die "no .java files under $src"

classes=target/facade-classes
rm -rf "$classes"
mkdir -p "$classes"
"$javac" --release 17 -g -encoding UTF-8 -Xlint:-options -d "$classes" "${sources[@]}" \
    || die "javac failed on the facade ($src)"
rm -f target/jfrctx.jar.tmp
"$jar" --create --file target/jfrctx.jar.tmp -C "$classes" . || die "jar failed"
mv -f target/jfrctx.jar.tmp target/jfrctx.jar
