#!/usr/bin/env bash
# jmc.sh — make sure JDK Mission Control's parser (org.openjdk.jmc:flightrecorder) is in the cache.
#
#   bash scripts/jmc.sh           prints the directory that holds the jars, e.g.
#                                 ~/.cache/jfrctx/jmc-9.1.0 (flightrecorder and what it depends
#                                 on: org.openjdk.jmc:common, owasp encoder, lz4)
#
# Fetched from Maven Central with Maven (`mvn dependency:copy-dependencies` on a generated pom in
# the cache), once: an existing complete directory is used as is, and Maven's local repository
# (~/.m2) answers without the network when it already has the artifacts. Cache:
# ${JFRCTX_CACHE:-$HOME/.cache/jfrctx}. tests/jfr_file.rs runs this when the jars are missing;
# scripts/test.sh runs it before `cargo test`. On failure (no mvn, offline, ...) one line
# `jmc.sh: ...` on stderr and a non-zero status.
set -uo pipefail

JMC_VERSION=9.1.0
cache="${JFRCTX_CACHE:-${HOME:-/root}/.cache/jfrctx}"
dest="$cache/jmc-$JMC_VERSION"

die() { echo "jmc.sh: $*" >&2; exit 1; }

complete() { [ -f "$1/.complete" ] && [ -f "$1/flightrecorder-$JMC_VERSION.jar" ]; }

if complete "$dest"; then
    echo "$dest"
    exit 0
fi
command -v mvn >/dev/null 2>&1 || die "mvn not found (apt-get install maven; scripts/jdks.sh installs it)"
mkdir -p "$cache" || die "cannot create $cache"
# one installer at a time per cache (parallel test processes)
if command -v flock >/dev/null 2>&1; then
    exec 9>"$cache/.jmc.lock" && flock 9 || die "cannot lock $cache/.jmc.lock"
    if complete "$dest"; then
        echo "$dest"
        exit 0
    fi
fi

work="$(mktemp -d "$cache/.jmc.XXXXXX")" || die "cannot create a temp dir in $cache"
trap 'rm -rf "$work"' EXIT
cat >"$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.jfrctx.cache</groupId>
  <artifactId>jmc-fetch</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.openjdk.jmc</groupId>
      <artifactId>flightrecorder</artifactId>
      <version>$JMC_VERSION</version>
    </dependency>
  </dependencies>
</project>
POM
goal=org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies
fetch() {  # $@: extra mvn flags
    (cd "$work" && mvn -B -q "$@" "$goal" -DoutputDirectory="$work/jars" -DincludeScope=runtime) \
        >"$work/mvn.log" 2>&1
}
# Offline first: no network when ~/.m2 already has everything. Then online, -U: the offline try
# leaves "not found" markers in ~/.m2 that Maven would otherwise believe.
if ! fetch -o; then
    if ! fetch -U; then
        cp "$work/mvn.log" "$cache/jmc-mvn.log" 2>/dev/null
        die "cannot download org.openjdk.jmc:flightrecorder:$JMC_VERSION from Maven Central (offline? mvn log: $cache/jmc-mvn.log)"
    fi
fi
[ -f "$work/jars/flightrecorder-$JMC_VERSION.jar" ] \
    || die "mvn did not produce flightrecorder-$JMC_VERSION.jar"
touch "$work/jars/.complete"
rm -rf "$dest"
mv -T "$work/jars" "$dest" || die "cannot move the jars to $dest"
echo "$dest"
