#!/usr/bin/env bash
# bench/restart.sh — what a mount's supervision costs, and how long
# applications stall while its server is replaced.
#
# Part 1, cost: two fresh SQLite volumes on the local disk, one mounted
# supervised (the default as root: a supervisor process and the journal of
# handles and acknowledged writes) and one with --supervise=false (one
# process, no journal), measured in interleaved rounds (the order alternates):
#   create / stat / unlink of FILES empty files (corebench meta), seconds
#   MIB MiB sequential write + fsync (corebench write), MiB/s
# and the local disk's write for reference. Prints medians and the ratio
# supervised / unsupervised.
#
# Part 2, stalls: on the supervised mount a probe writes 4 KiB and stats a
# file every millisecond (corebench stall) while a writer streams data; the
# server is killed with SIGKILL EVENTS times, then replaced with
# `shoal mount --upgrade` EVENTS times. Prints each event's longest wait.
#
# Usage (as root): bash bench/restart.sh
# Environment: ROUNDS (5), FILES (10000), MIB (1024), EVENTS (5),
#   BENCH_DIR (default /var/tmp/shoal-restart.PID), SHOAL_BIN (a built binary).
set -euo pipefail

ROUNDS=${ROUNDS:-5}
FILES=${FILES:-10000}
MIB=${MIB:-1024}
EVENTS=${EVENTS:-5}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${BENCH_DIR:-/var/tmp/shoal-restart.$$}

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

[ "$(id -u)" = 0 ] || { log "run as root (mounts, supervision)"; exit 1; }
mkdir -p "$WORK/bin" "$WORK/local"
cleanup() {
	for t in sup plain; do mountpoint -q "$WORK/$t/mnt" && "$SHOAL" umount "$WORK/$t/mnt" >/dev/null 2>&1 || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT
SHOAL=${SHOAL_BIN:-$WORK/bin/shoal}
[ -n "${SHOAL_BIN:-}" ] || (cd "$ROOT" && go build -o "$WORK/bin/shoal" ./cmd/shoal)
(cd "$ROOT" && go build -o "$WORK/bin/corebench" ./bench/cmd/corebench)
CB=$WORK/bin/corebench

mount_target() { # name extra-flags...
	local t=$1
	shift
	mkdir -p "$WORK/$t/mnt"
	[ -e "$WORK/$t/meta.db" ] || "$SHOAL" format "sqlite://$WORK/$t/meta.db" >/dev/null
	"$SHOAL" mount "sqlite://$WORK/$t/meta.db" "$WORK/$t/mnt" --background --log "$WORK/$t/log" "$@" >/dev/null
}
mount_target sup
mount_target plain --supervise=false
dir_of() { case $1 in local) echo "$WORK/local" ;; *) echo "$WORK/$1/mnt" ;; esac; }

RESULTS=$WORK/results.txt
: >"$RESULTS"
for ((r = 1; r <= ROUNDS; r++)); do
	if ((r % 2)); then order="sup plain local"; else order="local plain sup"; fi
	for t in $order; do
		log "round $r: $t"
		if [ "$t" != local ]; then
			"$CB" meta "$(dir_of "$t")/meta.r$r" "$FILES" | sed "s/^/$t /" >>"$RESULTS"
		fi
		"$CB" write "$(dir_of "$t")/big.r$r" "$MIB" | sed "s/^/$t /" >>"$RESULTS"
		rm -f "$(dir_of "$t")/big.r$r"
	done
done

median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
value() { awk -v t="$1" -v m="$2" '$1==t && $2==m {print $3}' "$RESULTS" | median; }
echo
echo "Shoal supervision cost — $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cpus, $(uname -r); files=$FILES size=${MIB}MiB rounds=$ROUNDS (medians)"
printf '%-22s %14s %14s %12s\n' metric supervised unsupervised ratio
for m in create stat unlink; do
	s=$(value sup "$m") p=$(value plain "$m")
	printf '%-22s %13ss %13ss %12s\n' "$m ($FILES files)" "$s" "$p" "$(awk -v a="$s" -v b="$p" 'BEGIN {printf "%.2fx time", a/b}')"
done
m=$(awk '$1=="sup" {print $2}' "$RESULTS" | grep -m1 write || echo write_mib_s)
s=$(value sup "$m") p=$(value plain "$m") l=$(value local "$m")
printf '%-22s %14s %14s %12s\n' "write MiB/s" "$s" "$p" "$(awk -v a="$s" -v b="$p" 'BEGIN {printf "%.2fx speed", a/b}')"
printf '%-22s %14s\n' "(local disk write)" "$l"

echo
echo "Stalls while the server is replaced (a probe writes and stats every ms; a writer streams data)"
MP=$WORK/sup/mnt
# The mount's runtime files (internal/rundir): /run/shoal as root, named by
# systemd-escape --path of the mountpoint.
PIDFILE=/run/shoal/$(systemd-escape --path "$MP").pid
for how in kill9 upgrade; do
	for ((e = 1; e <= EVENTS; e++)); do
		dd if=/dev/zero of="$MP/stream" bs=1M count=100000 status=none 2>/dev/null &
		writer=$!
		"$CB" stall "$MP/probe" 3 >"$WORK/stall.out" &
		probe=$!
		sleep 1
		old=$(cat "$PIDFILE")
		if [ "$how" = kill9 ]; then kill -9 "$old"; else "$SHOAL" mount --upgrade "$MP" >/dev/null; fi
		wait "$probe" || { log "the probe saw an error after $how"; exit 1; }
		kill "$writer" 2>/dev/null || true
		wait "$writer" 2>/dev/null || true
		rm -f "$MP/stream"
		printf '%-8s event %d: longest wait %6s ms (p99 %s ms)\n' "$how" "$e" \
			"$(awk '$1=="stall_max_ms" {print $2}' "$WORK/stall.out")" "$(awk '$1=="stall_p99_ms" {print $2}' "$WORK/stall.out")"
	done
done
