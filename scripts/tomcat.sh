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
# ${JFRCTX_CACHE:-$HOME/.cache/jfrctx}. tests/it/app_server.rs runs this when the jars are missing;
# scripts/test.sh runs it before `cargo test`. On failure (no mvn, offline, ...) one line
# `tomcat.sh: ...` on stderr and a non-zero status.
# The fetching itself is scripts/maven-cache.sh's.
set -uo pipefail

TOMCAT_VERSION=10.1.59
exec bash "$(dirname "${BASH_SOURCE[0]}")/maven-cache.sh" tomcat.sh "tomcat-$TOMCAT_VERSION" \
    "org.apache.tomcat.embed:tomcat-embed-core:$TOMCAT_VERSION"
