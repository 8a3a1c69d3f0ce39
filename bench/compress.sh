#!/usr/bin/env bash
# bench/compress.sh — what block compression costs and saves.
#
# Measures, in one run on one machine, interleaved round by round:
#   local   a directory on the local disk
#   plain   a Shoal volume without compression (SQLite + file bucket)
#   zstd    a Shoal volume formatted with --compress zstd
# for two kinds of data, each a MIB file written sequentially ending in
# fsync, then read cold (the mount restarted, page cache dropped):
#   random  incompressible (already-compressed media, archives, encrypted
#           data): the aim is at most 10% slower than plain
#   text    log-like lines: what compression is for
# and prints medians, the ratios zstd/plain and zstd/local, and the bytes
# each volume's bucket holds. With IOZONE=1 (default) it ends with
# `shoal bench iozone` over the three targets (its data is what the
# benchmark lab writes).
#
# Usage (as root, for drop_caches and mounts):
#   bash bench/compress.sh
#   ROUNDS=2 MIB=1024 bash bench/compress.sh
#   ROUNDS=1 MIB=128 IOZONE=0 bash bench/compress.sh      # quick smoke run
# Environment: ROUNDS (3), MIB (1024), IOZONE (1), ALG (zstd: lz4 works
#   too), BENCH_DIR (work dir; default /var/tmp/shoal-compress.PID),
#   SHOAL_BIN (use this shoal binary), KEEP=1 (keep the work dir).
set -euo pipefail

ROUNDS=${ROUNDS:-3}
MIB=${MIB:-1024}
ALG=${ALG:-zstd}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${BENCH_DIR:-/var/tmp/shoal-compress.$$}
RESULTS=$WORK/results.txt
TARGETS=(local plain "$ALG")
KINDS=(random text)
declare -A PID

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

build() {
	mkdir -p "$WORK/bin"
	(cd "$ROOT" && go build -o "$WORK/bin/corebench" ./bench/cmd/corebench) || die "building corebench failed"
	CB=$WORK/bin/corebench
	SHOAL=${SHOAL_BIN:-$WORK/bin/shoal}
	[ -n "${SHOAL_BIN:-}" ] || (cd "$ROOT" && go build -o "$SHOAL" ./cmd/shoal) || die "building shoal failed"
}

dir_of() { [ "$1" = local ] && echo "$WORK/local" || echo "$WORK/$1/mnt"; }

mount_vol() { # volume
	"$SHOAL" mount "sqlite://$WORK/$1/meta.db" "$WORK/$1/mnt" >>"$WORK/$1/mount.log" 2>&1 &
	PID[$1]=$!
	for _ in $(seq 300); do
		mountpoint -q "$WORK/$1/mnt" && return 0
		kill -0 "${PID[$1]}" 2>/dev/null || break
		sleep 0.1
	done
	tail -20 "$WORK/$1/mount.log" >&2
	die "mounting $1 failed"
}

umount_vol() { # volume
	[ -n "${PID[$1]:-}" ] || return 0
	"$SHOAL" umount "$WORK/$1/mnt" || fusermount3 -u -z "$WORK/$1/mnt" || true
	wait "${PID[$1]}" || true
	PID[$1]=
}

setup() {
	mkdir -p "$WORK/local"
	local v compress
	for v in plain "$ALG"; do
		compress=none
		[ "$v" = plain ] || compress=$v
		mkdir -p "$WORK/$v/mnt"
		"$SHOAL" format "sqlite://$WORK/$v/meta.db" --storage file --bucket "$WORK/$v/bucket" --name "$v" --compress "$compress" >/dev/null
		mount_vol "$v"
	done
}

cleanup() {
	set +e
	umount_vol plain
	umount_vol "$ALG"
	[ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}

stored_kib() { du -sk "$WORK/$1/bucket" | cut -f1; } # volume -> KiB its bucket holds

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

order() { # round -> the targets rotated by round
	local i n=${#TARGETS[@]}
	for ((i = 0; i < n; i++)); do echo "${TARGETS[$((($1 + i) % n))]}"; done
}

phase() { # round target kind
	local f
	f=$(dir_of "$2")/$3.r$1
	local before=0
	[ "$2" = local ] || before=$(stored_kib "$2")
	"$CB" write "$f" "$MIB" "$3" | sed "s/^/$2 $3-/" | tee -a "$RESULTS" >&2
	if [ "$2" != local ]; then
		echo "$2 $3-stored_mib $((($(stored_kib "$2") - before) / 1024))" | tee -a "$RESULTS" >&2
		umount_vol "$2"
		mount_vol "$2"
	fi
	drop_caches
	"$CB" read "$f" | sed "s/^/$2 $3-/" | tee -a "$RESULTS" >&2
	rm -f "$f"
}

# report prints medians per target and metric, and zstd's ratios.
report() {
	awk -v alg="$ALG" '
	{ v[$1 " " $2] = v[$1 " " $2] " " $3; m[$2] = 1 }
	function median(s,   a, n, i, j, t) {
		n = split(s, a, " ")
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		if (n == 0) return -1
		return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
	}
	END {
		printf "%-22s %10s %10s %10s   %12s %12s\n", "measurement (median)", "local", "plain", alg, alg "/plain", alg "/local"
		split("random-write random-read random-stored_mib text-write text-read text-stored_mib", ms, " ")
		for (k = 1; k <= 6; k++) {
			x = ms[k]; l = median(v["local " x]); p = median(v["plain " x]); z = median(v[alg " " x])
			printf "%-22s %10s %10.1f %10.1f   %12s %12s\n", x (x ~ /mib/ ? "" : " MiB/s"), (l < 0 ? "-" : sprintf("%.1f", l)), p, z,
				(p > 0 ? sprintf("%.2f", z / p) : "-"), (l > 0 ? sprintf("%.2f", z / l) : "-")
		}
	}' "$RESULTS"
}

iozone() {
	log "shoal bench iozone over local, plain and $ALG"
	"$SHOAL" bench iozone "local=$WORK/local" "plain=$WORK/plain/mnt" "$ALG=$WORK/$ALG/mnt" \
		--iozone-size 256MiB --iozone-workers 2 --rounds "$ROUNDS" --progress=never
}

main() {
	[ "$(id -u)" = 0 ] || die "run as root (mounts and drop_caches need it)"
	mkdir -p "$WORK"
	trap cleanup EXIT
	: >"$RESULTS"
	build
	setup
	local load0 r t k
	load0=$(cut -d' ' -f1-3 /proc/loadavg)
	for k in "${KINDS[@]}"; do
		for ((r = 1; r <= ROUNDS; r++)); do
			for t in $(order "$r"); do
				log "$k round $r target $t"
				phase "$r" "$t" "$k"
			done
		done
	done
	echo
	echo "Shoal compression benchmark — $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cpus, $(uname -r)"
	echo "size=${MIB}MiB rounds=$ROUNDS algorithm=$ALG work=$WORK"
	echo "load average at start: $load0; at end: $(cut -d' ' -f1-3 /proc/loadavg) (high = other jobs: numbers are noisy)"
	report
	if [ "${IOZONE:-1}" = 1 ]; then iozone; fi
}

main "$@"
