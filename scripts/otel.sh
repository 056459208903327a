#!/usr/bin/env bash
# otel.sh — make sure the OpenTelemetry jars used by jfrctx-otel are in the cache.
#
#   bash scripts/otel.sh          prints the directory that holds the jars, e.g.
#                                 ~/.cache/jfrctx/otel-2.33.1:
#                                 opentelemetry-javaagent-2.33.1.jar (the OTel Java agent, run by
#                                 tests/it/otel.rs) and the OTel SDK 1.67.0 jars the agent bundles
#                                 (api, context, sdk-trace, sdk-common,
#                                 sdk-extension-autoconfigure-spi and what they depend on), against
#                                 which scripts/build.sh compiles target/jfrctx-otel.jar
#
# Fetched from Maven Central with Maven (`mvn dependency:copy-dependencies` on a generated pom in
# the cache), once: an existing complete directory is used as is, and Maven's local repository
# (~/.m2) answers without the network when it already has the artifacts. Cache:
# ${JFRCTX_CACHE:-$HOME/.cache/jfrctx}. scripts/build.sh and tests/it/otel.rs run this when the jars
# are missing; scripts/test.sh runs it before `cargo test`. On failure (no mvn, offline, ...) one
# line `otel.sh: ...` on stderr and a non-zero status.
# The fetching itself is scripts/maven-cache.sh's.
set -uo pipefail

AGENT_VERSION=2.33.1   # io.opentelemetry.javaagent:opentelemetry-javaagent
SDK_VERSION=1.67.0     # the SDK inside that agent (its shaded api/version.properties)
sdk=()
for a in opentelemetry-api opentelemetry-context opentelemetry-sdk-common opentelemetry-sdk-trace \
    opentelemetry-sdk-extension-autoconfigure-spi; do
    sdk+=("io.opentelemetry:$a:$SDK_VERSION")
done
exec bash "$(dirname "${BASH_SOURCE[0]}")/maven-cache.sh" otel.sh "otel-$AGENT_VERSION" \
    "io.opentelemetry.javaagent:opentelemetry-javaagent:$AGENT_VERSION" "${sdk[@]}"
