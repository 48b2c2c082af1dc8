#!/usr/bin/env bash
# Fetches Apache Cassandra (org.apache.cassandra:cassandra-all) and all of its
# runtime dependencies from Maven Central as plain jars into a cache directory
# outside the repository:
#   ${KVLAB_CASSANDRA_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/kvlab/cassandra-<version>}/lib/*.jar
# Idempotent: does nothing when the jars are already there (marker lib/.complete).
# Installs openjdk-17-jre-headless and maven via apt-get if java or mvn is missing.
set -euo pipefail

CASSANDRA_VERSION="${CASSANDRA_VERSION:-5.0.9}"
DEST="${KVLAB_CASSANDRA_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/kvlab/cassandra-${CASSANDRA_VERSION}}"
LIB="$DEST/lib"
MARKER="$LIB/.complete"

exit_if_present() {
  if [ -f "$MARKER" ] && [ -f "$LIB/cassandra-all-$CASSANDRA_VERSION.jar" ]; then
    echo "deps: cassandra $CASSANDRA_VERSION jars present at $DEST"
    exit 0
  fi
}
exit_if_present

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

missing=()
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Cassandra 5.0 runs on Java 11 or 17.
java_major="$(java -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2}')"
case "$java_major" in
  11 | 17) ;;
  *) echo "deps: warning: java $java_major found; Cassandra 5.0 needs Java 11 or 17 (apt-get install openjdk-17-jre-headless)" >&2 ;;
esac

mkdir -p "$DEST"
# Serialise concurrent runs; the second one finds the marker and stops.
exec 9>"$DEST/.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi
exit_if_present

TMP="$(mktemp -d "${TMPDIR:-/tmp}/kvlab-cassandra-fetch.XXXXXX")"
trap 'rm -rf "$TMP" "$DEST"/lib.partial.*' EXIT

# A throwaway project whose only dependency is cassandra-all; copy-dependencies
# then copies it and its whole runtime closure (about 100 jars, 67 MB for 5.0.9;
# sigar comes without its native libraries, which Cassandra tolerates).
cat >"$TMP/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 http://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kvlab</groupId>
  <artifactId>kvlab-cassandra-fetch</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId>
      <artifactId>cassandra-all</artifactId>
      <version>${CASSANDRA_VERSION}</version>
    </dependency>
  </dependencies>
</project>
EOF

echo "deps: fetching cassandra-all $CASSANDRA_VERSION and its runtime dependencies from Maven Central into $LIB"
# Fill a staging directory first so an interrupted run never looks complete.
STAGE="$(mktemp -d "$DEST/lib.partial.XXXXXX")"
# Maven's output goes to a log (Debian's maven 3.8 prints stray ANSI codes even
# with -q -B); it is shown only when the fetch fails.
if ! mvn -q -B -f "$TMP/pom.xml" \
  org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$STAGE" >"$TMP/mvn.log" 2>&1; then
  sed 's/\x1b\[[0-9;]*m//g' "$TMP/mvn.log" >&2
  echo "deps: error: maven could not fetch cassandra-all $CASSANDRA_VERSION (is Maven Central reachable?)" >&2
  exit 1
fi
if [ ! -f "$STAGE/cassandra-all-$CASSANDRA_VERSION.jar" ]; then
  echo "deps: error: cassandra-all-$CASSANDRA_VERSION.jar was not fetched" >&2
  exit 1
fi

rm -rf "$LIB"
mv "$STAGE" "$LIB"
touch "$MARKER"
echo "deps: cassandra $CASSANDRA_VERSION: $(ls "$LIB"/*.jar | wc -l) jars in $LIB"
