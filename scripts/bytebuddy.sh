#!/usr/bin/env bash
# bytebuddy.sh — make sure ByteBuddy, relocated for the jfrctx Java agent, is in the cache.
#
#   bash scripts/bytebuddy.sh     prints the jar, e.g.
#                                 ~/.cache/jfrctx/bytebuddy-1.18.14/byte-buddy-relocated.jar:
#                                 net.bytebuddy:byte-buddy from Maven Central with its packages
#                                 moved under dev.jfrctx.javaagent.shaded (maven-shade-plugin), so
#                                 that the agent's copy never meets an application's ByteBuddy
#
# Fetched and relocated with Maven (`mvn package` of a generated pom in the cache), once: an
# existing complete directory is used as is, and Maven's local repository (~/.m2) answers without
# the network when it already has the artifacts. Cache: ${JFRCTX_CACHE:-$HOME/.cache/jfrctx}.
# scripts/build.sh runs this to build target/jfrctx-agent.jar. On failure (no mvn, offline, ...)
# one line `bytebuddy.sh: ...` on stderr and a non-zero status.
set -uo pipefail

BYTEBUDDY_VERSION=1.18.14
cache="${JFRCTX_CACHE:-${HOME:-/root}/.cache/jfrctx}"
dest="$cache/bytebuddy-$BYTEBUDDY_VERSION"
jar=byte-buddy-relocated.jar

die() { echo "bytebuddy.sh: $*" >&2; exit 1; }

complete() { [ -f "$1/.complete" ] && [ -f "$1/$jar" ]; }

if complete "$dest"; then
    echo "$dest/$jar"
    exit 0
fi
command -v mvn >/dev/null 2>&1 || die "mvn not found (apt-get install maven; scripts/jdks.sh installs it)"
mkdir -p "$cache" || die "cannot create $cache"
# one installer at a time per cache (parallel builds)
if command -v flock >/dev/null 2>&1; then
    exec 9>"$cache/.bytebuddy.lock" && flock 9 || die "cannot lock $cache/.bytebuddy.lock"
    if complete "$dest"; then
        echo "$dest/$jar"
        exit 0
    fi
fi

work="$(mktemp -d "$cache/.bytebuddy.XXXXXX")" || die "cannot create a temp dir in $cache"
trap 'rm -rf "$work"' EXIT
cat >"$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.jfrctx.cache</groupId>
  <artifactId>bytebuddy-relocated</artifactId>
  <version>1</version>
  <packaging>jar</packaging>
  <properties>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>net.bytebuddy</groupId>
      <artifactId>byte-buddy</artifactId>
      <version>$BYTEBUDDY_VERSION</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-shade-plugin</artifactId>
        <version>3.6.0</version>
        <executions>
          <execution>
            <phase>package</phase>
            <goals><goal>shade</goal></goals>
            <configuration>
              <createDependencyReducedPom>false</createDependencyReducedPom>
              <relocations>
                <relocation>
                  <pattern>net.bytebuddy</pattern>
                  <shadedPattern>dev.jfrctx.javaagent.shaded.net.bytebuddy</shadedPattern>
                </relocation>
              </relocations>
              <filters>
                <filter>
                  <artifact>*:*</artifact>
                  <excludes>
                    <!-- the multi-release part (JDK 24+ class-file API bridge): optional for
                         ByteBuddy, and newer class files than the shade plugin's ASM reads -->
                    <exclude>META-INF/versions/**</exclude>
                    <exclude>module-info.class</exclude>
                    <exclude>META-INF/MANIFEST.MF</exclude>
                  </excludes>
                </filter>
              </filters>
            </configuration>
          </execution>
        </executions>
      </plugin>
    </plugins>
  </build>
</project>
POM
build() {  # $@: extra mvn flags
    (cd "$work" && mvn -B -q "$@" package) >"$work/mvn.log" 2>&1
}
# Offline first: no network when ~/.m2 already has everything. Then online, -U: the offline try
# leaves "not found" markers in ~/.m2 that Maven would otherwise believe.
if ! build -o; then
    if ! build -U; then
        cp "$work/mvn.log" "$cache/bytebuddy-mvn.log" 2>/dev/null
        die "cannot download or relocate net.bytebuddy:byte-buddy:$BYTEBUDDY_VERSION from Maven Central (offline? mvn log: $cache/bytebuddy-mvn.log)"
    fi
fi
[ -f "$work/target/bytebuddy-relocated-1.jar" ] || die "mvn did not produce the relocated jar"
mkdir -p "$work/out" && cp "$work/target/bytebuddy-relocated-1.jar" "$work/out/$jar" \
    || die "cannot copy the relocated jar"
touch "$work/out/.complete"
rm -rf "$dest"
mv -T "$work/out" "$dest" || die "cannot move the jar to $dest"
echo "$dest/$jar"
