#!/usr/bin/env bash
# bench/vm.sh — the issue-6 speed benchmark: a VM disk image under O_DIRECT.
#
# Random 4 KiB reads and writes with O_DIRECT (fio, libaio, direct=1) on a
# 4 GiB image, created sparse and then partly filled, on three targets in
# the same run:
#   local   a file on the local disk
#   bindfs  a FUSE passthrough of a local directory (Debian's bindfs): what
#           any FUSE file system pays on this machine
#   shoal   a fresh Shoal volume (SQLite + file bucket on the same disk),
#           mounted with the binary built from this tree
# Jobs (each over the filled part of the image, so reads hit data):
#   randread-qd1     1 job,  iodepth 1   (one guest thread, synchronous)
#   randwrite-qd1    1 job,  iodepth 1
#   randread-par     4 jobs, iodepth 8   (a busy guest: 32 requests in flight)
#   randwrite-par    4 jobs, iodepth 8
# Writes end with an fsync (end_fsync), as a guest's flush would, and that
# time counts. It prints IOPS per target and Shoal's ratios to local (the
# issue aims for 0.5 or better) and to bindfs.
#
# Usage (as root: mounts):
#   bash bench/vm.sh
#   RUNTIME=10 FILL=512M bash bench/vm.sh      # quicker
# Environment: RUNTIME seconds per job (20), SIZE image size (4G), FILL how
#   much of it is written before the jobs (1G; Shoal's bucket peaks at about
#   6x that under the random writes; everything is deleted at the end), BENCH_DIR (work dir on the local disk;
#   default /var/tmp/shoal-vmbench.PID), SHOAL_BIN (use this binary instead
#   of building ./cmd/shoal), SHOAL_MOUNT_ARGS (extra mount flags), KEEP=1.
set -euo pipefail

RUNTIME=${RUNTIME:-20}
SIZE=${SIZE:-4G}
FILL=${FILL:-1G}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${BENCH_DIR:-/var/tmp/shoal-vmbench.$$}
MNT=$WORK/mnt
SHOAL_PID=
declare -A IOPS

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

preflight() {
	[ "$(id -u)" = 0 ] || die "run as root (mounts need it)"
	if ! command -v fio >/dev/null || ! command -v fusermount3 >/dev/null || ! command -v bindfs >/dev/null; then
		log "installing fio, fuse3 and bindfs"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q fio fuse3 bindfs >&2 || die "apt-get install fio fuse3 bindfs failed"
	fi
	[ -e /dev/fuse ] || die "no /dev/fuse"
	check_space
}

# check_space refuses to start without room for both images and Shoal's
# write amplification under random writes (compaction rewrites chunks;
# the old objects are deleted later): about 8x FILL at peak.
check_space() {
	local fill_mib avail_mib
	fill_mib=$(numfmt --from=iec "$FILL" | awk '{print int($1 / 1048576)}')
	mkdir -p "$WORK"
	avail_mib=$(df -Pm "$WORK" | awk 'NR == 2 {print $4}')
	[ "$avail_mib" -ge $((fill_mib * 8)) ] ||
		die "need $((fill_mib * 8)) MiB free under $WORK for FILL=$FILL, have $avail_mib (lower FILL)"
}

build() {
	mkdir -p "$WORK/bin"
	SHOAL=${SHOAL_BIN:-$WORK/bin/shoal}
	if [ -z "${SHOAL_BIN:-}" ]; then
		log "building shoal"
		(cd "$ROOT" && go build -o "$SHOAL" ./cmd/shoal) || die "building shoal failed"
	fi
}

mount_shoal() {
	mkdir -p "$MNT" "$WORK/vol"
	"$SHOAL" format "sqlite://$WORK/vol/meta.db" --name vmbench --storage file --bucket "$WORK/vol/bucket" >/dev/null
	# shellcheck disable=SC2086 # SHOAL_MOUNT_ARGS is a list of flags
	"$SHOAL" mount "sqlite://$WORK/vol/meta.db" "$MNT" ${SHOAL_MOUNT_ARGS:-} >"$WORK/mount.log" 2>&1 &
	SHOAL_PID=$!
	for _ in $(seq 300); do
		grep -qs " $MNT fuse" /proc/mounts && return 0
		kill -0 "$SHOAL_PID" 2>/dev/null || die "shoal mount exited: $(tail -5 "$WORK/mount.log")"
		sleep 0.1
	done
	die "shoal did not mount in 30 s"
}

cleanup() {
	set +e
	mountpoint -q "$WORK/pt" && fusermount3 -u "$WORK/pt"
	if grep -qs " $MNT fuse" /proc/mounts; then
		"$SHOAL" umount "$MNT" >/dev/null 2>&1 || fusermount3 -u -z "$MNT"
	fi
	[ -z "$SHOAL_PID" ] || wait "$SHOAL_PID" 2>/dev/null
	if [ "${KEEP:-0}" = 1 ]; then
		log "kept $WORK"
	else
		rm -rf "$WORK"
	fi
}

# prepare DIR creates DIR/disk.img sparse at SIZE and fills its first FILL
# bytes with O_DIRECT 1 MiB writes.
prepare() {
	local img=$1/disk.img
	rm -f "$img"
	truncate -s "$SIZE" "$img"
	fio --name=fill --filename="$img" --rw=write --bs=1M --direct=1 --ioengine=libaio \
		--iodepth=4 --size="$FILL" --end_fsync=1 --output=/dev/null
}

# job NAME RW JOBS DEPTH IMAGE prints the job's total IOPS (fio terse v3:
# field 8 = read IOPS, field 49 = write IOPS; group_reporting sums jobs).
job() {
	local name=$1 rw=$2 jobs=$3 depth=$4 img=$5 field=8
	[ "$rw" = randwrite ] && field=49
	fio --name="$name" --filename="$img" --rw="$rw" --bs=4k --direct=1 --ioengine=libaio \
		--iodepth="$depth" --numjobs="$jobs" --size="$FILL" --time_based --runtime="$RUNTIME" \
		--randrepeat=0 --norandommap --end_fsync=1 --group_reporting \
		--output-format=terse --terse-version=3 | awk -F';' -v f="$field" '{print int($f)}'
}

JOBS=(
	"randread-qd1 randread 1 1"
	"randwrite-qd1 randwrite 1 1"
	"randread-par randread 4 8"
	"randwrite-par randwrite 4 8"
)

run_target() {
	local target=$1 dir=$2 spec name rw jobs depth
	log "$target: creating a $SIZE sparse image, filling $FILL"
	prepare "$dir"
	for spec in "${JOBS[@]}"; do
		read -r name rw jobs depth <<<"$spec"
		IOPS[$target,$name]=$(job "$name" "$rw" "$jobs" "$depth" "$dir/disk.img")
		log "$target $name: ${IOPS[$target,$name]} IOPS"
	done
	log "$target: disk use $(du -sh "$WORK" | cut -f1) under $WORK"
	rm -f "$dir/disk.img"
}

report() {
	local spec name
	printf '\n%-16s %12s %12s %12s %12s %12s\n' "4 KiB O_DIRECT" "local IOPS" "bindfs IOPS" "shoal IOPS" "shoal/local" "shoal/bindfs"
	for spec in "${JOBS[@]}"; do
		read -r name _ <<<"$spec"
		awk -v n="$name" -v l="${IOPS[local,$name]}" -v b="${IOPS[bindfs,$name]}" -v s="${IOPS[shoal,$name]}" \
			'BEGIN {printf "%-16s %12d %12d %12d %12.2f %12.2f\n", n, l, b, s, (l > 0 ? s / l : 0), (b > 0 ? s / b : 0)}'
	done
	printf '\nimage %s, %s filled, %ss per job, fio %s, %s, %s cores\n' \
		"$SIZE" "$FILL" "$RUNTIME" "$(fio --version)" "$(uname -r)" "$(nproc)"
}

main() {
	preflight
	mkdir -p "$WORK/local"
	trap cleanup EXIT
	trap 'exit 130' INT TERM
	build
	mount_shoal
	run_target local "$WORK/local"
	mkdir -p "$WORK/pt-src" "$WORK/pt"
	bindfs "$WORK/pt-src" "$WORK/pt" || die "bindfs mount failed"
	run_target bindfs "$WORK/pt"
	fusermount3 -u "$WORK/pt"
	run_target shoal "$MNT"
	report
}

main "$@"
