#!/bin/bash
# RawPages (FileChannel from/into native memory) against dd, same directory, same size, one run.
#   inventory/bench/raw-pages-bench.sh [DIR] [MIB]     (defaults: inventory/target/bench, 4096 MiB)
# Writes: dd bs=1M conv=fsync from /dev/zero vs RawPages.Writer + commit (fsync, rename).
# Reads: page cache dropped first when /proc/sys/vm/drop_caches is writable (else both read warm: said below).
# Times are wall clock around each command (JVM start included). Goal: RawPages >= 0.8x dd.
set -euo pipefail
MODULE=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-$MODULE/target/bench}
MIB=${2:-4096}
JAVA_HOME=$(source "$MODULE/../integration-tests/find-jdk.sh" && find_jdk) || exit 1
export JAVA_HOME
mkdir -p "$DIR"
(cd "$MODULE/.." && mvn -B -q -pl inventory test-compile dependency:build-classpath \
    -Dmdep.outputFile="$MODULE/target/test.classpath" -Dmdep.includeScope=test) 2>&1 | grep -v WARNING || true
CP="$MODULE/target/test-classes:$MODULE/target/classes:$(cat "$MODULE/target/test.classpath")"
JAVA=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -cp "$CP" dev.criugpu.inventory.bench.RawPagesBench)

now() { date +%s.%N; }
rate() { awk -v m="$MIB" -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", m / (b - a) }'; }
drop() {
    sync
    if echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; then echo cold; else echo warm; fi
}
trap 'rm -f "$DIR/dd.img" "$DIR/rawpages.img"' EXIT

echo "directory: $DIR ($(df -T "$DIR" | awk 'NR==2 {print $2}')), size: $MIB MiB, $(nproc) cores"
drop > /dev/null
t0=$(now); dd if=/dev/zero of="$DIR/dd.img" bs=1M count="$MIB" conv=fsync status=none; t1=$(now)
drop > /dev/null
t2=$(now); "${JAVA[@]}" write "$DIR/rawpages.img" "$MIB" >/dev/null; t3=$(now)
w_dd=$(rate "$t0" "$t1"); w_rp=$(rate "$t2" "$t3")

cache=$(drop)
t0=$(now); dd if="$DIR/dd.img" of=/dev/null bs=1M status=none; t1=$(now)
drop > /dev/null
t2=$(now); "${JAVA[@]}" read "$DIR/rawpages.img" >/dev/null; t3=$(now)
r_dd=$(rate "$t0" "$t1"); r_rp=$(rate "$t2" "$t3")

printf "%-22s %10s %10s %8s\n" "" "dd MiB/s" "RawPages" "ratio"
printf "%-22s %10s %10s %8s\n" "write (fsync)" "$w_dd" "$w_rp" "$(awk -v a="$w_rp" -v b="$w_dd" 'BEGIN{printf "%.2f", a/b}')"
printf "%-22s %10s %10s %8s\n" "read ($cache cache)" "$r_dd" "$r_rp" "$(awk -v a="$r_rp" -v b="$r_dd" 'BEGIN{printf "%.2f", a/b}')"
