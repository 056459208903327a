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
# ${JFRCTX_CACHE:-$HOME/.cache/jfrctx}. tests/it/jfr_file.rs runs this when the jars are missing;
# scripts/test.sh runs it before `cargo test`. On failure (no mvn, offline, ...) one line
# `jmc.sh: ...` on stderr and a non-zero status.
# The fetching itself is scripts/maven-cache.sh's.
set -uo pipefail

JMC_VERSION=9.1.0
exec bash "$(dirname "${BASH_SOURCE[0]}")/maven-cache.sh" jmc.sh "jmc-$JMC_VERSION" \
    "org.openjdk.jmc:flightrecorder:$JMC_VERSION"
