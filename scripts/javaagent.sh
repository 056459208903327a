#!/usr/bin/env bash
# javaagent.sh — build target/jfrctx-agent.jar, the Java agent that makes the context follow work
# across the JDK's hand-off points (-javaagent:target/jfrctx-agent.jar; README "Propagation").
#
#   target/jfrctx-agent.jar   Premain-Class dev.jfrctx.javaagent.Premain; holds the agent
#                             (java/javaagent/src), ByteBuddy relocated under
#                             dev.jfrctx.javaagent.shaded (scripts/bytebuddy.sh, Maven Central), and
#                             the boot jar dev/jfrctx/javaagent/jfrctx-boot.jar: the facade
#                             (java/src/main/java) plus dev.jfrctx.AutoPropagation
#                             (java/javaagent/boot), which the agent puts on the bootstrap search
#                             path at start-up
#
# Compiled with JDK 17's javac ($JFRCTX_JDK17, else $JAVA_HOME, else javac on PATH), --release 17.
# scripts/build.sh runs it; so do tests/it/propagation.rs and tests/it/app_server.rs (through
# tests/it/common/javaagent.rs). On failure one line `javaagent.sh: ...` on stderr and a non-zero
# status.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

die() { echo "javaagent.sh: $*" >&2; exit 1; }

# shellcheck source=scripts/lib/jdk-tools.sh
source scripts/lib/jdk-tools.sh

bytebuddy="$(bash scripts/bytebuddy.sh)" || die "ByteBuddy is not available (scripts/bytebuddy.sh)"

# one build at a time (test processes run in parallel)
mkdir -p target
if command -v flock >/dev/null 2>&1; then
    exec 9>target/.javaagent.lock && flock 9 || die "cannot lock target/.javaagent.lock"
fi

out=target/javaagent
rm -rf "$out"
mkdir -p "$out/boot" "$out/agent"

mapfile -t boot_sources < <(find java/src/main/java java/javaagent/boot -name '*.java' | sort)
# Every doc comment well formed, public and protected members documented (see build.sh).
"$javac" --release 17 -g -encoding UTF-8 -Xlint:-options -Xdoclint:all,-missing/package -Werror \
    -d "$out/boot" "${boot_sources[@]}" \
    || die "javac failed on the boot jar (facade + java/javaagent/boot)"
"$jar" --create --file "$out/jfrctx-boot.jar" -C "$out/boot" . || die "jar failed (boot jar)"

mapfile -t agent_sources < <(find java/javaagent/src -name '*.java' | sort)
"$javac" --release 17 -g -encoding UTF-8 -Xlint:-options -Xdoclint:all,-missing/package -Werror \
    -cp "$out/boot:$bytebuddy" \
    -d "$out/agent" "${agent_sources[@]}" || die "javac failed on the Java agent (java/javaagent/src)"
mkdir -p "$out/agent/dev/jfrctx/javaagent"
cp "$out/jfrctx-boot.jar" "$out/agent/dev/jfrctx/javaagent/jfrctx-boot.jar"
(cd "$out/agent" && "$jar" xf "$bytebuddy") || die "cannot unpack $bytebuddy"
rm -rf "$out/agent/META-INF/maven"
cat >"$out/MANIFEST.MF" <<MF
Premain-Class: dev.jfrctx.javaagent.Premain
Agent-Class: dev.jfrctx.javaagent.Premain
Can-Retransform-Classes: true
Can-Redefine-Classes: false
MF
rm -f target/jfrctx-agent.jar.tmp
"$jar" --create --file target/jfrctx-agent.jar.tmp --manifest "$out/MANIFEST.MF" -C "$out/agent" . \
    || die "jar failed (agent jar)"
mv -f target/jfrctx-agent.jar.tmp target/jfrctx-agent.jar
