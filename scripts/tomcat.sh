#!/usr/bin/env bash
# tomcat.sh — make sure the embedded Apache Tomcat used by the servlet example is in the cache.
#
#   bash scripts/tomcat.sh        prints the directory that holds the jars, e.g.
#                                 ~/.cache/jfrctx/tomcat-10.1.59 (tomcat-embed-core and what it
#                                 depends on: tomcat-annotations-api)
#
# Fetched from Maven Central with Maven (`mvn dependency:copy-dependencies` on a generated pom in
# the cache), once: an existing complete directory is used as is, and Maven's local repository
# (~/.m2) answers without the network when it already has the artifacts. Cache:
# ${JFRCTX_CACHE:-$HOME/.cache/jfrctx}. tests/app_server.rs runs this when the jars are missing;
# scripts/test.sh runs it before `cargo test`. On failure (no mvn, offline, ...) one line
# `tomcat.sh: ...` on stderr and a non-zero status.
set -uo pipefail

TOMCAT_VERSION=10.1.59
cache="${JFRCTX_CACHE:-${HOME:-/root}/.cache/jfrctx}"
dest="$cache/tomcat-$TOMCAT_VERSION"

die() { echo "tomcat.sh: $*" >&2; exit 1; }

complete() { [ -f "$1/.complete" ] && [ -f "$1/tomcat-embed-core-$TOMCAT_VERSION.jar" ]; }

if complete "$dest"; then
    echo "$dest"
    exit 0
fi
command -v mvn >/dev/null 2>&1 || die "mvn not found (apt-get install maven; scripts/jdks.sh installs it)"
mkdir -p "$cache" || die "cannot create $cache"
# one installer at a time per cache (parallel test processes)
if command -v flock >/dev/null 2>&1; then
    exec 9>"$cache/.tomcat.lock" && flock 9 || die "cannot lock $cache/.tomcat.lock"
    if complete "$dest"; then
        echo "$dest"
        exit 0
    fi
fi

work="$(mktemp -d "$cache/.tomcat.XXXXXX")" || die "cannot create a temp dir in $cache"
trap 'rm -rf "$work"' EXIT
cat >"$work/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.jfrctx.cache</groupId>
  <artifactId>tomcat-fetch</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.tomcat.embed</groupId>
      <artifactId>tomcat-embed-core</artifactId>
      <version>$TOMCAT_VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF
goal=org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies
fetch() {  # $@: extra mvn flags
    (cd "$work" && mvn -B -q "$@" "$goal" -DoutputDirectory="$work/jars" -DincludeScope=runtime) \
        >"$work/mvn.log" 2>&1
}
# Offline first: no network when ~/.m2 already has everything. Then online, -U: the offline try
# leaves "not found" markers in ~/.m2 that Maven would otherwise believe.
if ! fetch -o; then
    if ! fetch -U; then
        cp "$work/mvn.log" "$cache/tomcat-mvn.log" 2>/dev/null
        die "cannot download org.apache.tomcat.embed:tomcat-embed-core:$TOMCAT_VERSION from Maven Central (offline? mvn log: $cache/tomcat-mvn.log)"
    fi
fi
[ -f "$work/jars/tomcat-embed-core-$TOMCAT_VERSION.jar" ] \
    || die "mvn did not produce tomcat-embed-core-$TOMCAT_VERSION.jar"
touch "$work/jars/.complete"
rm -rf "$dest"
mv -T "$work/jars" "$dest" || die "cannot move the jars to $dest"
echo "$dest"
