#!/usr/bin/env bash
# bench/shared.sh — the issue-3 speed benchmark: Shoal as shared storage.
#
# Measures, in one run on one machine, with the servers on loopback:
#   local      a directory on the local disk (the yardstick)
#   pg+s3      a Shoal volume with PostgreSQL metadata and MinIO data
#   redis+s3   a Shoal volume with Redis metadata and MinIO data
# each twice: one mount (one process in one directory), and four mounts of
# the same volume at once (four `shoal mount` processes, each working in its
# own directory; for local, four processes in four directories). Workloads:
#   create / stat / unlink FILES empty files (default 10,000 per process)
#   sequential write of MIB MiB (default 1024) ending in fsync, per process
#   cold sequential read of it (mounts remounted, page cache dropped)
# and prints the figures with ratios against the local disk. With four
# mounts the times are those of the slowest process, and the throughputs
# are aggregates (all bytes over the wall-clock time of the phase).
#
# Usage (as root: mounts and drop_caches):
#   bash bench/shared.sh
#   FILES=2000 MIB=256 bash bench/shared.sh       # quick look
# It starts PostgreSQL and Redis (scripts/services.sh) and MinIO
# (scripts/minio.sh) if they are not running, and leaves them running. Each
# run uses its own PostgreSQL schema, Redis key namespace and S3 key prefix,
# and removes its files (and the schema and keys) at the end.
# Environment: FILES, MIB, MOUNTS (4), BENCH_DIR (local work dir, default
#   /var/tmp/shoal-shared.PID), SHOAL_BIN (use this binary), KEEP=1.
set -euo pipefail

FILES=${FILES:-10000}
MIB=${MIB:-1024}
MOUNTS=${MOUNTS:-4}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${BENCH_DIR:-/var/tmp/shoal-shared.$$}
RESULTS=$WORK/results.txt
RUN=bench$$
PIDS=()

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
now() { date +%s.%N; }

preflight() {
	[ "$(id -u)" = 0 ] || die "run as root (mounts and drop_caches need it)"
	command -v fusermount3 >/dev/null || die "fuse3 not installed (apt-get install -y fuse3)"
	[ -e /dev/fuse ] || die "no /dev/fuse"
}

build() {
	mkdir -p "$WORK/bin"
	(cd "$ROOT" && go build -o "$WORK/bin/corebench" ./bench/cmd/corebench) || die "building corebench failed"
	CB=$WORK/bin/corebench
	SHOAL=${SHOAL_BIN:-$WORK/bin/shoal}
	[ -n "${SHOAL_BIN:-}" ] || (cd "$ROOT" && go build -o "$SHOAL" ./cmd/shoal) || die "building shoal failed"
}

servers() {
	eval "$(sh "$ROOT/scripts/services.sh" start)"
	eval "$(bash "$ROOT/scripts/minio.sh" start)"
	PSQL=$(ls /usr/lib/postgresql/*/bin/psql | head -1)
	for n in 1 "$MOUNTS"; do
		"$PSQL" -X -q "$SHOAL_TEST_PG" -c "CREATE SCHEMA ${RUN}_$n" || die "cannot create schema ${RUN}_$n"
	done
}

# meta_url CONFIG N -> the META-URL of the volume of that configuration
# (a fresh volume for each number of mounts)
meta_url() {
	case $1 in
	pg) echo "${SHOAL_TEST_PG}&search_path=${RUN}_$2" ;;
	redis) echo "${SHOAL_TEST_REDIS}?ns=${RUN}_$2" ;;
	esac
}

format() { # config n
	"$SHOAL" format "$(meta_url "$1" "$2")" --storage s3 --bucket "$SHOAL_TEST_S3/$RUN-$1-$2" --name "bench-$1-$2" >/dev/null ||
		die "shoal format $1 failed"
}

mount_all() { # config n
	local i mp
	for ((i = 0; i < $2; i++)); do
		mp=$WORK/$1/mnt$i
		mkdir -p "$mp"
		"$SHOAL" mount "$(meta_url "$1" "$2")" "$mp" >>"$WORK/$1/mount$i.log" 2>&1 &
		PIDS+=($!)
		for _ in $(seq 300); do mountpoint -q "$mp" && break; sleep 0.1; done
		mountpoint -q "$mp" || { tail -20 "$WORK/$1/mount$i.log" >&2; die "mount $mp failed"; }
	done
}

umount_all() {
	local mp
	for mp in $(awk '$2 ~ "^'"$WORK"'/" && $3 ~ /^fuse/ {print $2}' /proc/mounts); do
		"$SHOAL" umount "$mp" || fusermount3 -u -z "$mp" || true
	done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	PIDS=()
}

# dirs CONFIG N -> the N directories the processes work in
dirs() {
	local i
	for ((i = 0; i < $2; i++)); do
		if [ "$1" = local ]; then echo "$WORK/local/d$i"; else echo "$WORK/$1/mnt$i/d$i"; fi
	done
}

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# parallel CMD... runs "CMD DIR" for every directory in $DIRS at once,
# prints their outputs, and sets WALL to the wall-clock seconds.
parallel() {
	local d i=0 t0 pids=()
	t0=$(now)
	for d in $DIRS; do
		"$@" "$d" >"$WORK/out.$i" 2>&1 &
		pids+=($!)
		i=$((i + 1))
	done
	for p in "${pids[@]}"; do wait "$p" || { cat "$WORK"/out.* >&2; die "$* failed"; }; done
	WALL=$(echo "$(now) - $t0" | bc -l)
	cat "$WORK"/out.*
	rm -f "$WORK"/out.*
}

record() { echo "$1 $2 $3" >>"$RESULTS"; log "$1 $2 $3"; }

# measure CONFIG N: the three phases with N processes (and N mounts).
measure() {
	local cfg=$1 n=$2
	[ "$cfg" = local ] || { format "$cfg" "$n" && mount_all "$cfg" "$n"; }
	DIRS=$(dirs "$cfg" "$n")
	mkdir -p $DIRS
	meta_one() { "$CB" meta "$1/meta" "$FILES"; }
	parallel meta_one | awk -v c="$cfg" -v n="$n" '{ if ($2 > max[$1]) max[$1] = $2 } END { for (k in max) print c, n "x-" k, max[k] }' >>"$RESULTS"
	write_one() { "$CB" write "$1/big" "$MIB"; }
	parallel write_one >/dev/null
	record "$cfg" "${n}x-write" "$(echo "$n * $MIB / $WALL" | bc -l)"
	if [ "$cfg" != local ]; then umount_all; mount_all "$cfg" "$n"; fi
	drop_caches
	read_one() { "$CB" read "$1/big"; }
	parallel read_one >/dev/null
	record "$cfg" "${n}x-read" "$(echo "$n * $MIB / $WALL" | bc -l)"
	rm -rf $DIRS
	[ "$cfg" = local ] || umount_all
}

report() {
	echo
	echo "Shoal shared-storage benchmark — $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cpus, $(uname -r)"
	echo "files=$FILES per process, size=${MIB}MiB per process; servers on loopback (PostgreSQL $("$PSQL" -V | awk '{print $3}'), $(redis-server --version | awk '{print $3}'), MinIO)"
	awk -v mounts="$MOUNTS" '
	{ v[$1 " " $2] = $3 }
	function row(label, key, tput,   l, p, r, pr, rr) {
		l = v["local " key]; p = v["pg " key]; r = v["redis " key]
		if (tput) { pr = sprintf("%5.0f%%", 100 * p / l); rr = sprintf("%5.0f%%", 100 * r / l) }
		else { pr = sprintf("%6.2fx", p / l); rr = sprintf("%6.2fx", r / l) }
		printf "%-34s %10.3f %10.3f %8s %10.3f %8s\n", label, l, p, pr, r, rr
	}
	END {
		printf "%-34s %10s %10s %8s %10s %8s\n", "measurement", "local", "pg+s3", "vs local", "redis+s3", "vs local"
		for (i = 0; i < 2; i++) {
			n = (i == 0) ? 1 : mounts
			w = (n == 1) ? "1 mount" : n " mounts"
			row(w ": create (s)", n "x-create", 0)
			row(w ": stat (s)", n "x-stat", 0)
			row(w ": unlink (s)", n "x-unlink", 0)
			row(w ": write+fsync (MiB/s)", n "x-write", 1)
			row(w ": cold read (MiB/s)", n "x-read", 1)
		}
	}' "$RESULTS"
	echo "(times: slowest process; MiB/s: all processes together; ratios: x = times slower than local, % = share of local throughput)"
}

cleanup() {
	set +e
	umount_all
	for n in 1 "$MOUNTS"; do
		if [ -n "${PSQL:-}" ]; then PGOPTIONS=--client-min-messages=warning "$PSQL" -X -q "$SHOAL_TEST_PG" -c "DROP SCHEMA IF EXISTS ${RUN}_$n CASCADE" >/dev/null; fi
		if [ -n "${SHOAL_TEST_REDIS:-}" ]; then
			redis-cli -u "$SHOAL_TEST_REDIS" --scan --pattern "{${RUN}_$n}*" | xargs -r -n 500 redis-cli -u "$SHOAL_TEST_REDIS" del >/dev/null
		fi
	done
	[ "${KEEP:-0}" = 1 ] || rm -rf "$WORK/local" "$WORK/pg" "$WORK/redis" "$WORK/bin"
}

main() {
	preflight
	command -v bc >/dev/null || apt-get install -y -q bc >&2
	mkdir -p "$WORK"
	: >"$RESULTS"
	trap cleanup EXIT
	build
	servers
	log "work dir $WORK, $(nproc) cpus, FILES=$FILES MIB=$MIB MOUNTS=$MOUNTS"
	local n cfg
	for n in 1 "$MOUNTS"; do
		for cfg in local pg redis; do
			log "== $cfg, $n process(es)"
			measure "$cfg" "$n"
		done
	done
	report
}

main "$@"
