#!/usr/bin/env bash
# otel.sh — make sure the OpenTelemetry jars used by jfrctx-otel are in the cache.
#
#   bash scripts/otel.sh          prints the directory that holds the jars, e.g.
#                                 ~/.cache/jfrctx/otel-2.33.1:
#                                 opentelemetry-javaagent-2.33.1.jar (the OTel Java agent, run by
#                                 tests/otel.rs) and the OTel SDK 1.67.0 jars the agent bundles
#                                 (api, context, sdk-trace, sdk-common,
#                                 sdk-extension-autoconfigure-spi and what they depend on), against
#                                 which scripts/build.sh compiles target/jfrctx-otel.jar
#
# Fetched from Maven Central with Maven (`mvn dependency:copy-dependencies` on a generated pom in
# the cache), once: an existing complete directory is used as is, and Maven's local repository
# (~/.m2) answers without the network when it already has the artifacts. Cache:
# ${JFRCTX_CACHE:-$HOME/.cache/jfrctx}. scripts/build.sh and tests/otel.rs run this when the jars
# are missing; scripts/test.sh runs it before `cargo test`. On failure (no mvn, offline, ...) one
# line `otel.sh: ...` on stderr and a non-zero status.
set -uo pipefail

AGENT_VERSION=2.33.1   # io.opentelemetry.javaagent:opentelemetry-javaagent
SDK_VERSION=1.67.0     # the SDK inside that agent (its shaded api/version.properties)
cache="${JFRCTX_CACHE:-${HOME:-/root}/.cache/jfrctx}"
dest="$cache/otel-$AGENT_VERSION"

die() { echo "otel.sh: $*" >&2; exit 1; }

complete() {
    [ -f "$1/.complete" ] && [ -f "$1/opentelemetry-javaagent-$AGENT_VERSION.jar" ] \
        && [ -f "$1/opentelemetry-sdk-trace-$SDK_VERSION.jar" ]
}

if complete "$dest"; then
    echo "$dest"
    exit 0
fi
command -v mvn >/dev/null 2>&1 || die "mvn not found (apt-get install maven; scripts/jdks.sh installs it)"
mkdir -p "$cache" || die "cannot create $cache"
# one installer at a time per cache (parallel test processes, build.sh beside a test)
if command -v flock >/dev/null 2>&1; then
    exec 9>"$cache/.otel.lock" && flock 9 || die "cannot lock $cache/.otel.lock"
    if complete "$dest"; then
        echo "$dest"
        exit 0
    fi
fi

work="$(mktemp -d "$cache/.otel.XXXXXX")" || die "cannot create a temp dir in $cache"
trap 'rm -rf "$work"' EXIT
dep() {  # groupId artifactId version
    printf '    <dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version></dependency>\n' "$@"
}
{
    cat <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.jfrctx.cache</groupId>
  <artifactId>otel-fetch</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
EOF
    dep io.opentelemetry.javaagent opentelemetry-javaagent "$AGENT_VERSION"
    for a in opentelemetry-api opentelemetry-context opentelemetry-sdk-common opentelemetry-sdk-trace \
        opentelemetry-sdk-extension-autoconfigure-spi; do
        dep io.opentelemetry "$a" "$SDK_VERSION"
    done
    cat <<EOF
  </dependencies>
</project>
EOF
} >"$work/pom.xml"
goal=org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies
fetch() {  # $@: extra mvn flags
    (cd "$work" && mvn -B -q "$@" "$goal" -DoutputDirectory="$work/jars" -DincludeScope=runtime) \
        >"$work/mvn.log" 2>&1
}
# Offline first: no network when ~/.m2 already has everything. Then online, -U: the offline try
# leaves "not found" markers in ~/.m2 that Maven would otherwise believe.
if ! fetch -o; then
    if ! fetch -U; then
        cp "$work/mvn.log" "$cache/otel-mvn.log" 2>/dev/null
        die "cannot download io.opentelemetry.javaagent:opentelemetry-javaagent:$AGENT_VERSION and the OTel SDK $SDK_VERSION from Maven Central (offline? mvn log: $cache/otel-mvn.log)"
    fi
fi
for f in "opentelemetry-javaagent-$AGENT_VERSION.jar" "opentelemetry-sdk-trace-$SDK_VERSION.jar"; do
    [ -f "$work/jars/$f" ] || die "mvn did not produce $f"
done
touch "$work/jars/.complete"
rm -rf "$dest"
mv -T "$work/jars" "$dest" || die "cannot move the jars to $dest"
echo "$dest"
