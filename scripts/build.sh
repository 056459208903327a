#!/usr/bin/env bash
# build.sh — build the agent and the facade jar.
#
#   target/release/libjfrctx.so     the JVMTI agent (-agentpath:...), stripped of debug info
#   target/release/libjfrctx.so.debug   its debug info (objcopy --only-keep-debug; gdb finds it
#                                   through the library's .gnu_debuglink)
#   target/release/jfrctx-report    the JSON-lines report tool (and jfrctx-report.debug)
#   target/jfrctx.jar               the facade (module dev.jfrctx, also a plain class-path jar),
#                                   javac --release 17
#   target/jfrctx-sources.jar       its sources
#   target/jfrctx-agent.jar         the Java agent (-javaagent:...): context across executors,
#                                   ForkJoinPool, Timer and new threads (scripts/javaagent.sh)
#   target/jfrctx-otel.jar          the OpenTelemetry bridge (dev.jfrctx.otel, java/otel/) with the
#                                   facade inside: an OTel Java agent extension
#                                   (-Dotel.javaagent.extensions=) and, on an application's class
#                                   path, JfrctxOtel.install for the OTel SDK. Compiled against the
#                                   OTel jars of scripts/otel.sh (Maven Central, cached); when they
#                                   cannot be fetched one line says so and the rest is built
#   ~/.m2/repository/dev/jfrctx/jfrctx/VERSION/   the facade as the Maven artifact
#                                   dev.jfrctx:jfrctx:VERSION (VERSION from Cargo.toml), with its
#                                   pom and sources jar, for Maven and Gradle (mavenLocal()) builds
#
# The facade is compiled with JDK 17's javac: $JFRCTX_JDK17, else $JAVA_HOME, else `javac` on
# PATH. The Maven install uses `mvn -o install:install-file` (offline: never the network); when
# Maven has not cached its install plugin yet, the same files are written into
# ~/.m2/repository directly; without mvn one line says so and the build still succeeds.
# Does not install anything else: run scripts/jdks.sh first on a fresh machine (scripts/test.sh
# and scripts/demo.sh do). Without libclang (bindgen needs it for the JVMTI headers) it stops
# before cargo with one line saying what to install.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

die() { echo "build.sh: $*" >&2; exit 1; }

# ---- JDK tools for the facade ---------------------------------------------------------------
# shellcheck source=scripts/lib/jdk-tools.sh
source scripts/lib/jdk-tools.sh

# ---- Rust: agent cdylib + report tool ------------------------------------------------------
command -v cargo >/dev/null 2>&1 || die "cargo not found on PATH"

# bindgen loads libclang at build time and panics with a backtrace when it is missing; look
# where clang-sys looks (LIBCLANG_PATH, llvm-config, the linker cache, the usual directories).
have_libclang() {
    local d ldconfig
    in_dir() { compgen -G "$1/libclang.so*" >/dev/null || compgen -G "$1/libclang-[0-9]*.so*" >/dev/null; }
    if [ -n "${LIBCLANG_PATH:-}" ]; then
        in_dir "$LIBCLANG_PATH" && return 0
        [ -f "$LIBCLANG_PATH" ] && return 0
    fi
    if command -v llvm-config >/dev/null 2>&1; then
        d="$(llvm-config --libdir 2>/dev/null)"
        [ -n "$d" ] && in_dir "$d" && return 0
    fi
    for ldconfig in ldconfig /sbin/ldconfig /usr/sbin/ldconfig; do
        if command -v "$ldconfig" >/dev/null 2>&1; then
            "$ldconfig" -p 2>/dev/null | grep -q 'libclang[-.0-9]*\.so' && return 0
            break
        fi
    done
    for d in /usr/lib/llvm-*/lib /usr/lib64/llvm /usr/lib/x86_64-linux-gnu \
        /usr/lib/aarch64-linux-gnu /usr/lib /usr/lib64 /usr/local/lib; do
        in_dir "$d" && return 0
    done
    return 1
}
have_libclang || die "libclang not found (bindgen needs it to read the JVMTI headers): apt-get install libclang-dev, or set LIBCLANG_PATH to the directory holding libclang.so"
cargo build --release --quiet || die "cargo build --release failed"
for f in target/release/libjfrctx.so target/release/jfrctx-report; do
    [ -f "$f" ] || die "cargo build did not produce $f"
done

# ---- release artifact: stripped, its debug info beside it ----------------------------------
# profile.release keeps line tables (debug = 1: file:line in gdb, perf, addr2line), which make
# up most of the library. The library is left stripped of them (the symbol table stays, so
# hs_err_pid files and perf still name the functions) with a .gnu_debuglink to FILE.debug, where
# gdb finds them (README "Symbols for a crash report"). The stripped file replaces cargo's hard
# link to target/release/deps/ by a rename, so cargo's own output stays intact and its freshness
# is unaffected; the next cargo build (the tests run one) links the unstripped library back in
# place, which holds the same code and the same build id, so the .debug file still matches it.
split_debug() {  # FILE → FILE stripped of debug info, FILE.debug holding it
    local f="$1"
    objcopy --only-keep-debug "$f" "$f.debug.tmp" \
        && mv -f "$f.debug.tmp" "$f.debug" \
        && chmod a-x "$f.debug" \
        && objcopy --strip-debug --add-gnu-debuglink="$f.debug" "$f" "$f.stripped.tmp" \
        && mv -f "$f.stripped.tmp" "$f"
}
if command -v objcopy >/dev/null 2>&1; then
    for f in target/release/libjfrctx.so target/release/jfrctx-report; do
        split_debug "$f" || die "objcopy failed on $f"
    done
else
    echo "build.sh: objcopy not found: target/release/libjfrctx.so keeps its debug info (apt-get install binutils)" >&2
fi

# ---- facade jar ----------------------------------------------------------------------------
src=java/src/main/java
[ -d "$src" ] || die "no facade sources under $src"
mapfile -t sources < <(find "$src" -name '*.java' | sort)
[ "${#sources[@]}" -gt 0 ] || die "no .java files under $src"

# The module descriptor (module dev.jfrctx) lives apart, in java/src/main/module, so that what
# compiles java/src/main/java as class-path code (Gradle 4.4, the test harness, the Java agent's
# boot jar, the benchmarks) is unaffected; here it is compiled with the sources.
# -Xdoclint:all,-missing/package -Werror: every doc comment well formed (HTML, references, tags),
# and every public or protected member documented with its @param/@return/@throws; package-private
# and private members may go without a comment. The same lint checks as Gradle's.
module_info=java/src/main/module/module-info.java
[ -f "$module_info" ] || die "no module descriptor $module_info"
classes=target/facade-classes
rm -rf "$classes"
mkdir -p "$classes"
"$javac" --release 17 -g -encoding UTF-8 -Xlint:all,-try,-options -Xdoclint:all,-missing/package -Werror \
    -d "$classes" "$module_info" "${sources[@]}" \
    || die "javac failed on the facade ($src, $module_info)"
rm -f target/jfrctx.jar.tmp
"$jar" --create --file target/jfrctx.jar.tmp -C "$classes" . || die "jar failed"
mv -f target/jfrctx.jar.tmp target/jfrctx.jar
rm -f target/jfrctx-sources.jar
"$jar" --create --file target/jfrctx-sources.jar -C "$src" . -C "$(dirname "$module_info")" module-info.java \
    || die "jar failed (sources)"

# ---- the Java agent: target/jfrctx-agent.jar (ByteBuddy from Maven Central, relocated) ------
if command -v mvn >/dev/null 2>&1; then
    bash scripts/javaagent.sh || die "scripts/javaagent.sh failed (the Java agent, target/jfrctx-agent.jar)"
else
    echo "build.sh: mvn not found: the Java agent target/jfrctx-agent.jar is not built (it needs ByteBuddy from Maven Central; apt-get install maven)" >&2
fi

# ---- OpenTelemetry bridge jar ---------------------------------------------------------------
build_otel() {
    local otel cp
    otel="$(bash scripts/otel.sh)" || return 1
    cp="$(find "$otel" -maxdepth 1 -name '*.jar' ! -name 'opentelemetry-javaagent-*' | sort | paste -sd: -)"
    rm -rf target/otel-classes
    mkdir -p target/otel-classes
    cp -R "$classes/." target/otel-classes/
    rm -f target/otel-classes/module-info.class # the facade's; this jar is class-path code only
    "$javac" --release 17 -g -encoding UTF-8 -Xlint:-options -Xdoclint:all,-missing/package -Werror \
        -cp "$classes:$cp" -d target/otel-classes \
        $(find java/otel/src -name '*.java' | sort) || { echo "build.sh: javac failed on java/otel/src" >&2; return 2; }
    cp -R java/otel/resources/. target/otel-classes/
    rm -f target/jfrctx-otel.jar.tmp
    "$jar" --create --file target/jfrctx-otel.jar.tmp -C target/otel-classes . || return 2
    mv -f target/jfrctx-otel.jar.tmp target/jfrctx-otel.jar
}
build_otel; rc=$?
if [ "$rc" = 1 ]; then
    echo "build.sh: the OpenTelemetry jars could not be fetched (scripts/otel.sh above): target/jfrctx-otel.jar is not built" >&2
elif [ "$rc" != 0 ]; then
    die "building target/jfrctx-otel.jar failed"
fi

# ---- the facade in the local Maven repository: dev.jfrctx:jfrctx:VERSION --------------------
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
[ -n "$version" ] || die "no version in Cargo.toml"
cat >target/jfrctx.pom <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.jfrctx</groupId>
  <artifactId>jfrctx</artifactId>
  <version>$version</version>
  <packaging>jar</packaging>
  <name>jfrctx facade</name>
  <description>The RecordingContext API (draft JEP) for the jfrctx JVMTI agent; a no-op without the agent</description>
  <licenses>
    <license><name>Apache-2.0</name></license>
  </licenses>
</project>
EOF
if ! command -v mvn >/dev/null 2>&1; then
    echo "build.sh: mvn not found: dev.jfrctx:jfrctx:$version is not installed into the local Maven repository (apt-get install maven); target/jfrctx.jar is built" >&2
    exit 0
fi
mvn_env=()
[ -n "$jdk_bin" ] && mvn_env=(env "JAVA_HOME=${jdk_bin%/bin/}")
if ! "${mvn_env[@]}" mvn -B -q -o install:install-file -Dfile=target/jfrctx.jar \
    -DpomFile=target/jfrctx.pom -Dsources=target/jfrctx-sources.jar >target/mvn-install.log 2>&1; then
    # Offline, and Maven has not cached its install plugin yet: lay the artifact out as
    # install:install-file does (default local repository).
    repo="$HOME/.m2/repository"
    dir="$repo/dev/jfrctx/jfrctx/$version"
    mkdir -p "$dir" \
        && cp target/jfrctx.jar "$dir/jfrctx-$version.jar" \
        && cp target/jfrctx.pom "$dir/jfrctx-$version.pom" \
        && cp target/jfrctx-sources.jar "$dir/jfrctx-$version-sources.jar" \
        || die "cannot write dev.jfrctx:jfrctx:$version into $dir"
    cat >"$repo/dev/jfrctx/jfrctx/maven-metadata-local.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<metadata>
  <groupId>dev.jfrctx</groupId>
  <artifactId>jfrctx</artifactId>
  <versioning>
    <release>$version</release>
    <versions>
      <version>$version</version>
    </versions>
    <lastUpdated>$(date -u +%Y%m%d%H%M%S)</lastUpdated>
  </versioning>
</metadata>
EOF
fi
