#!/usr/bin/env bash
# bench/core.sh — the issue-2 speed benchmark.
#
# Measures, in one run on one machine, three targets side by side:
#   local   a directory on the local disk
#   bindfs  a FUSE passthrough of a local directory (Debian's bindfs): the
#           practical floor for any FUSE file system here
#   shoal   a fresh Shoal volume (SQLite + file bucket on the same disk),
#           mounted with the binary built from this tree
# and prints medians over interleaved rounds with Shoal's ratios against the
# issue's targets:
#   create / stat / unlink 10,000 empty files     <= 1.5x bindfs
#   1 GiB sequential write ending in fsync          >= 80% of local
#   cold sequential read of it (caches dropped)     >= 50% of local
#   100,000 files in one dir: create, readdir, stat <= 2x bindfs, and the
#   mount's peak RSS (VmHWM) reported.
#
# Usage (as root, for drop_caches and mounts):
#   bash bench/core.sh                 # full run
#   ROUNDS=5 bash bench/core.sh        # more rounds
#   FILES=2000 HUGE=20000 MIB=256 ROUNDS=1 bash bench/core.sh   # quick smoke run
# Environment: ROUNDS (3), FILES (10000), HUGE (100000), MIB (1024),
#   BENCH_DIR (work dir on the local disk; default /var/tmp/shoal-bench.PID),
#   RESULTS (file to keep the raw "target metric value" lines),
#   SHOAL_MOUNT_ARGS (extra `shoal mount` flags), SHOAL_BIN (use this shoal
#   binary instead of building ./cmd/shoal), KEEP=1 (keep the work dir).
set -euo pipefail

ROUNDS=${ROUNDS:-3}
FILES=${FILES:-10000}
HUGE=${HUGE:-100000}
MIB=${MIB:-1024}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${BENCH_DIR:-/var/tmp/shoal-bench.$$}
RESULTS=${RESULTS:-$WORK/results.txt}
TARGETS=(local bindfs shoal)
SHOAL_PID=

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

preflight() {
	[ "$(id -u)" = 0 ] || die "run as root (mounts and drop_caches need it)"
	command -v bindfs >/dev/null || die "bindfs not installed (apt-get install -y bindfs)"
	command -v fusermount3 >/dev/null || die "fuse3 not installed (apt-get install -y fuse3)"
	[ -e /dev/fuse ] || die "no /dev/fuse"
}

build() {
	mkdir -p "$WORK/bin"
	log "building corebench${SHOAL_BIN:+ (using shoal binary $SHOAL_BIN)}${SHOAL_BIN:- and shoal}"
	(cd "$ROOT" && go build -o "$WORK/bin/corebench" ./bench/cmd/corebench) || die "building corebench failed"
	CB=$WORK/bin/corebench
	SHOAL=${SHOAL_BIN:-$WORK/bin/shoal}
	[ -n "${SHOAL_BIN:-}" ] || (cd "$ROOT" && go build -o "$SHOAL" ./cmd/shoal) || die "building shoal failed"
}

dir_of() { # target -> the directory to measure in
	case $1 in
	local) echo "$WORK/local" ;;
	bindfs) echo "$WORK/pt" ;;
	shoal) echo "$WORK/shoal/mnt" ;;
	esac
}

wait_mounted() { # dir pid
	for _ in $(seq 300); do
		mountpoint -q "$1" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

mount_shoal() {
	local log=$WORK/shoal/mount.log
	# Foreground in the background, so that $! is the mount process (for VmHWM).
	# shellcheck disable=SC2086
	"$SHOAL" mount "sqlite://$WORK/shoal/meta.db" "$WORK/shoal/mnt" ${SHOAL_MOUNT_ARGS:-} >>"$log" 2>&1 &
	SHOAL_PID=$!
	wait_mounted "$WORK/shoal/mnt" "$SHOAL_PID" || { tail -20 "$log" >&2; die "shoal mount failed"; }
}

# server_pid: the process serving the mount (its supervisor's child when
# supervised, as root by default), whose memory is the mount's.
server_pid() {
	# internal/rundir: /run/shoal as root, named by systemd-escape --path.
	cat "/run/shoal/$(systemd-escape --path "$WORK/shoal/mnt" 2>/dev/null).pid" 2>/dev/null || echo "$SHOAL_PID"
}

umount_shoal() {
	[ -n "$SHOAL_PID" ] || return 0
	"$SHOAL" umount "$WORK/shoal/mnt" || fusermount3 -u -z "$WORK/shoal/mnt" || true
	wait "$SHOAL_PID" || log "shoal mount exited with status $?"
	SHOAL_PID=
}

setup() {
	mkdir -p "$WORK/local" "$WORK/pt-src" "$WORK/pt" "$WORK/shoal/mnt"
	bindfs "$WORK/pt-src" "$WORK/pt"
	"$SHOAL" format "sqlite://$WORK/shoal/meta.db" --storage file --bucket "$WORK/shoal/bucket" --name bench >/dev/null
	mount_shoal
}

cleanup() {
	set +e
	umount_shoal
	mountpoint -q "$WORK/pt" && fusermount3 -u "$WORK/pt"
	if [ "${KEEP:-0}" != 1 ]; then
		rm -rf "$WORK/local" "$WORK/pt-src" "$WORK/shoal" "$WORK/bin"
		[ "$RESULTS" = "$WORK/results.txt" ] || rm -rf "$WORK"
	fi
}

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

record() { # target: prefixes corebench's "metric value" lines
	sed "s/^/$1 /" | tee -a "$RESULTS" >&2
}

order() { # round -> the targets rotated by round, so no target always goes first
	local r=$1 i n=${#TARGETS[@]}
	for ((i = 0; i < n; i++)); do echo "${TARGETS[$(((i + r) % n))]}"; done
}

phase_meta() { # round target
	local d
	d=$(dir_of "$2")/meta.r$1
	"$CB" meta "$d" "$FILES" | record "$2"
	if [ "$2" = shoal ]; then "$CB" rss "$(server_pid)" | sed 's/rss_kib/rss_kib_meta/' | record shoal; fi
}

phase_io() { # round target
	local f
	f=$(dir_of "$2")/big.r$1
	"$CB" write "$f" "$MIB" | record "$2"
	if [ "$2" = shoal ]; then umount_shoal; mount_shoal; fi
	drop_caches
	"$CB" read "$f" | record "$2"
	rm -f "$f"
}

phase_hugedir() { # round target
	local d
	d=$(dir_of "$2")/huge.r$1
	if [ "$2" = shoal ]; then umount_shoal; mount_shoal; fi
	drop_caches
	"$CB" hugedir "$d" "$HUGE" | record "$2"
	if [ "$2" = shoal ]; then "$CB" rss "$(server_pid)" | sed 's/rss_kib/rss_kib_hugedir/' | record shoal; fi
	rm -rf "$d"
}

main() {
	preflight
	mkdir -p "$WORK"
	trap cleanup EXIT
	: >"$RESULTS"
	build
	setup
	log "work dir $WORK ($(df -T "$WORK" | awk 'NR==2 {print $2 " on " $1}')), $(nproc) cpus, kernel $(uname -r)"
	local phase r t load0
	load0=$(cut -d' ' -f1-3 /proc/loadavg)
	for phase in meta io hugedir; do
		for ((r = 1; r <= ROUNDS; r++)); do
			for t in $(order "$r"); do
				log "phase $phase round $r target $t"
				"phase_$phase" "$r" "$t"
			done
		done
	done
	echo
	echo "Shoal core benchmark — $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cpus, $(uname -r)"
	echo "files=$FILES huge=$HUGE size=${MIB}MiB rounds=$ROUNDS work=$WORK"
	echo "load average at start: $load0; at end: $(cut -d' ' -f1-3 /proc/loadavg) (high = other jobs: numbers are noisy)"
	"$CB" report "$RESULTS"
}

main "$@"
