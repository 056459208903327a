# jdk-tools.sh — sourced by scripts/build.sh and scripts/javaagent.sh: sets `javac` and `jar`
# to JDK 17's ($JFRCTX_JDK17, else $JAVA_HOME, else the ones on PATH); calls the caller's `die`
# with one line when there are none.
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
