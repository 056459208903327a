#!/usr/bin/env bash
# maven-cache.sh — make sure some Maven Central artifacts (and what they depend on) are in the
# cache; scripts/tomcat.sh, scripts/jmc.sh and scripts/otel.sh are this with their artifacts.
#
#   bash scripts/maven-cache.sh NAME DIR GROUP:ARTIFACT:VERSION [GROUP:ARTIFACT:VERSION ...]
#
# Prints the directory ${JFRCTX_CACHE:-$HOME/.cache/jfrctx}/DIR holding ARTIFACT-VERSION.jar of
# every artifact named and their runtime dependencies. Fetched with Maven
# (`mvn dependency:copy-dependencies` on a generated pom in the cache), once: a complete directory
# (marker `.complete`, every named jar present) is used as is; Maven's local repository (~/.m2)
# answers without the network when it already has the artifacts (offline first, then online
# with -U: the offline try leaves "not found" markers that Maven would otherwise believe). One
# installer at a time per directory (flock). On failure (no mvn, offline, ...) one line
# `NAME: ...` on stderr, the Maven log kept as DIR-mvn.log in the cache, and a non-zero status.
set -uo pipefail

[ $# -ge 3 ] || { echo "maven-cache.sh: usage: maven-cache.sh NAME DIR GROUP:ARTIFACT:VERSION..." >&2; exit 2; }
name="$1"
dir="$2"
shift 2
cache="${JFRCTX_CACHE:-${HOME:-/root}/.cache/jfrctx}"
dest="$cache/$dir"

die() { echo "$name: $*" >&2; exit 1; }

jars=()
deps=""
for coordinate in "$@"; do
    IFS=: read -r group artifact version extra <<<"$coordinate"
    [ -n "$group" ] && [ -n "$artifact" ] && [ -n "$version" ] && [ -z "$extra" ] \
        || die "bad Maven coordinate '$coordinate' (GROUP:ARTIFACT:VERSION)"
    jars+=("$artifact-$version.jar")
    deps+="    <dependency><groupId>$group</groupId><artifactId>$artifact</artifactId><version>$version</version></dependency>
"
done

complete() {
    [ -f "$1/.complete" ] || return 1
    local jar
    for jar in "${jars[@]}"; do
        [ -f "$1/$jar" ] || return 1
    done
}

if complete "$dest"; then
    echo "$dest"
    exit 0
fi
command -v mvn >/dev/null 2>&1 || die "mvn not found (apt-get install maven; scripts/jdks.sh installs it)"
mkdir -p "$cache" || die "cannot create $cache"
# one installer at a time per cache entry (parallel test processes, build.sh beside a test)
if command -v flock >/dev/null 2>&1; then
    exec 9>"$cache/.$dir.lock" && flock 9 || die "cannot lock $cache/.$dir.lock"
    if complete "$dest"; then
        echo "$dest"
        exit 0
    fi
fi

work="$(mktemp -d "$cache/.$dir.XXXXXX")" || die "cannot create a temp dir in $cache"
trap 'rm -rf "$work"' EXIT
cat >"$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.jfrctx.cache</groupId>
  <artifactId>$dir-fetch</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
$deps  </dependencies>
</project>
POM
goal=org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies
fetch() {  # $@: extra mvn flags
    (cd "$work" && mvn -B -q "$@" "$goal" -DoutputDirectory="$work/jars" -DincludeScope=runtime) \
        >"$work/mvn.log" 2>&1
}
if ! fetch -o; then
    if ! fetch -U; then
        cp "$work/mvn.log" "$cache/$dir-mvn.log" 2>/dev/null
        die "cannot download $* from Maven Central (offline? mvn log: $cache/$dir-mvn.log)"
    fi
fi
for jar in "${jars[@]}"; do
    [ -f "$work/jars/$jar" ] || die "mvn did not produce $jar"
done
touch "$work/jars/.complete"
rm -rf "$dest"
mv -T "$work/jars" "$dest" || die "cannot move the jars to $dest"
echo "$dest"
