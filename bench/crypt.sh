#!/usr/bin/env bash
# bench/crypt.sh — the cost of encryption at rest (issue 14).
#
# Measures, in one run, three targets interleaved round by round:
#   local   a directory on the local disk
#   plain   a Shoal volume (SQLite + file bucket on the same disk)
#   crypt   the same kind of volume formatted with --encrypt
# the 1 GiB sequential write ending in fsync and the cold sequential read
# of bench/core.sh (corebench write/read; the Shoal volumes are remounted
# and the page cache dropped before the read), then `shoal bench iozone`
# over the three. Prints medians and the ratios crypt/plain and x/local.
# The aim: encryption costs at most 15% of sequential throughput.
#
# Usage (as root): bash bench/crypt.sh
# Environment: ROUNDS (2), MIB (1024), IOZONE_SIZE (64MiB), BENCH_DIR,
#   SHOAL_BIN, KEEP=1 (keep the work dir).
set -euo pipefail

ROUNDS=${ROUNDS:-2}
MIB=${MIB:-1024}
IOZONE_SIZE=${IOZONE_SIZE:-64MiB}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${BENCH_DIR:-/var/tmp/shoal-crypt.$$}
RESULTS=$WORK/results.txt
TARGETS=(local plain crypt)
declare -A PIDS=()

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

build() {
	mkdir -p "$WORK/bin"
	(cd "$ROOT" && go build -o "$WORK/bin/corebench" ./bench/cmd/corebench) || die "building corebench failed"
	CB=$WORK/bin/corebench
	SHOAL=${SHOAL_BIN:-$WORK/bin/shoal}
	[ -n "${SHOAL_BIN:-}" ] || (cd "$ROOT" && go build -o "$SHOAL" ./cmd/shoal) || die "building shoal failed"
}

dir_of() { case $1 in local) echo "$WORK/local" ;; *) echo "$WORK/$1/mnt" ;; esac; }

mount_vol() { # plain|crypt
	local v=$1
	"$SHOAL" mount "sqlite://$WORK/$v/meta.db" "$WORK/$v/mnt" --passphrase-file "$WORK/pass" >>"$WORK/$v/mount.log" 2>&1 &
	PIDS[$v]=$!
	for _ in $(seq 300); do
		mountpoint -q "$WORK/$v/mnt" && return 0
		kill -0 "${PIDS[$v]}" 2>/dev/null || break
		sleep 0.1
	done
	tail -20 "$WORK/$v/mount.log" >&2
	die "mount of $v failed"
}

umount_vol() { # plain|crypt
	local v=$1
	[ -n "${PIDS[$v]:-}" ] || return 0
	"$SHOAL" umount "$WORK/$v/mnt" || fusermount3 -u -z "$WORK/$v/mnt" || true
	wait "${PIDS[$v]}" || log "mount of $v exited with status $?"
	PIDS[$v]=
}

setup() {
	mkdir -p "$WORK/local" "$WORK/plain/mnt" "$WORK/crypt/mnt"
	head -c 24 /dev/urandom | base64 >"$WORK/pass"
	"$SHOAL" format "sqlite://$WORK/plain/meta.db" --bucket "$WORK/plain/bucket" --name plain >/dev/null
	"$SHOAL" format "sqlite://$WORK/crypt/meta.db" --bucket "$WORK/crypt/bucket" --name crypt \
		--encrypt --passphrase-file "$WORK/pass" >/dev/null
	mount_vol plain
	mount_vol crypt
}

cleanup() {
	set +e
	umount_vol plain
	umount_vol crypt
	[ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

phase_io() { # round target
	local f
	f=$(dir_of "$2")/big.r$1
	"$CB" write "$f" "$MIB" | sed "s/^/$2 /" | tee -a "$RESULTS" >&2
	if [ "$2" != local ]; then umount_vol "$2"; mount_vol "$2"; fi
	drop_caches
	"$CB" read "$f" | sed "s/^/$2 /" | tee -a "$RESULTS" >&2
	rm -f "$f"
}

report() {
	awk '
	{ v[$1 " " $2] = v[$1 " " $2] " " $3 }
	function median(s,   a, n, i, j, t) {
		n = split(s, a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	END {
		printf "%-26s %9s %9s %9s   %11s %11s %11s\n", "MiB/s (median)", "local", "plain", "crypt", "plain/local", "crypt/local", "crypt/plain"
		split("write read", ms, " ")
		for (k = 1; k <= 2; k++) {
			m = ms[k]; l = median(v["local " m]); p = median(v["plain " m]); c = median(v["crypt " m])
			label = m == "write" ? "1 GiB write + fsync" : "cold sequential read"
			printf "%-26s %9.1f %9.1f %9.1f   %11.2f %11.2f %11.2f\n", label, l, p, c, p / l, c / l, c / p
		}
	}' "$RESULTS"
}

main() {
	[ "$(id -u)" = 0 ] || die "run as root (mounts and drop_caches need it)"
	mkdir -p "$WORK"
	trap cleanup EXIT
	: >"$RESULTS"
	build
	setup
	local load0 r i
	load0=$(cut -d' ' -f1-3 /proc/loadavg)
	for ((r = 1; r <= ROUNDS; r++)); do
		for ((i = 0; i < 3; i++)); do
			t=${TARGETS[$(((i + r) % 3))]}
			log "round $r target $t"
			phase_io "$r" "$t"
		done
	done
	log "shoal bench iozone"
	"$SHOAL" bench iozone --rounds "$ROUNDS" --iozone-workers 2 --iozone-size "$IOZONE_SIZE" --progress=never \
		local="$WORK/local" plain="$WORK/plain/mnt" crypt="$WORK/crypt/mnt" >"$WORK/iozone.txt" || die "shoal bench failed"
	echo
	echo "Shoal encryption benchmark — $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cpus, $(uname -r)"
	echo "size=${MIB}MiB rounds=$ROUNDS; load average at start: $load0; at end: $(cut -d' ' -f1-3 /proc/loadavg)"
	report
	echo
	cat "$WORK/iozone.txt"
}

main "$@"
