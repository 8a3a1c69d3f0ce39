#!/usr/bin/env bash
# bench/backup.sh — shoal backup against rsync -a (issue 17 item 4).
#
# Builds a tree of FILES files holding MIB MiB in all (default 10,000 and
# 2,048) in a Shoal mount (SQLite, file store on the local disk), then,
# interleaved round by round, from that mount to the same disk:
#   rsync1   rsync -a MOUNT/ DIR/ into an empty DIR (first pass)
#   full     shoal backup META-URL DEST into an empty DEST
#   (1% of the files are rewritten with new data)
#   rsync2   rsync -a again into the same DIR (second pass)
#   incr     shoal backup again into the same DEST (incremental)
#   read     the least any backup of the change must do: read the blocks
#            the change wrote, cold (cat to /dev/null, 8 at a time)
#   floor    what a backup that keeps them must do: read them and write
#            them durably to the same disk (cp, 8 at a time, then sync)
# Page caches are dropped before each timed step. Prints medians and the
# ratios full/rsync1 (goal <= 1.5) and rsync2/incr (goal >= 10), and
# rsync2/read and rsync2/floor: the most any backup can gain over rsync's
# second pass on this disk (it must read the changed data; a durable one
# must also write and sync it).
#
# Usage (as root: mounts and drop_caches):
#   bash bench/backup.sh
#   FILES=2000 MIB=256 ROUNDS=1 bash bench/backup.sh     # quick look
# Environment: FILES, MIB, ROUNDS (3), BENCH_DIR (default
#   /var/tmp/shoal-backup.PID), SHOAL_BIN (use this binary), KEEP=1.
set -euo pipefail

FILES=${FILES:-10000}
MIB=${MIB:-2048}
ROUNDS=${ROUNDS:-3}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${BENCH_DIR:-/var/tmp/shoal-backup.$$}

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
now() { date +%s.%N; }
drop() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true; }

mkdir -p "$WORK"
BIN=${SHOAL_BIN:-$WORK/shoal}
if [ -z "${SHOAL_BIN:-}" ]; then
	(cd "$ROOT" && PATH=/usr/local/go/bin:$PATH go build -o "$BIN" ./cmd/shoal)
fi
META=sqlite://$WORK/meta.db
MNT=$WORK/mnt
cleanup() {
	"$BIN" umount "$MNT" >/dev/null 2>&1 || true
	[ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$MNT"
"$BIN" format "$META" --name bench --bucket "$WORK/objects" >/dev/null
"$BIN" mount --background "$META" "$MNT" >/dev/null

log "writing $FILES files, $MIB MiB in all"
t0=$(now)
python3 - "$MNT" "$FILES" "$MIB" <<'PY'
import os, sys
root, files, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
size = mib * 1024 * 1024 // files
chunk = os.urandom(1 << 20)
for i in range(files):
    d = os.path.join(root, "d%03d" % (i // 100))
    os.makedirs(d, exist_ok=True)
    off = (i * 7919) % (len(chunk) - 1)
    data = (chunk[off:] + chunk)[:size] if size <= len(chunk) else (chunk * (size // len(chunk) + 1))[:size]
    with open(os.path.join(d, "f%05d" % i), "wb") as f:
        f.write(i.to_bytes(8, "little") + data[8:])
PY
sync
log "tree written in $(echo "$(now) - $t0" | bc) s"

change() { # rewrite 1% of the files with new data
	python3 - "$MNT" "$FILES" "$1" <<'PY'
import os, sys
root, files, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for j in range(max(1, files // 100)):
    i = (j * 100 + seed) % files
    p = os.path.join(root, "d%03d" % (i // 100), "f%05d" % i)
    n = os.path.getsize(p)
    with open(p, "wb") as f:
        f.write(os.urandom(n))
PY
	sync
}

timed() { # name cmd...: appends "name seconds" to results
	local name=$1; shift
	drop
	local t0; t0=$(now)
	"$@" >/dev/null
	local s; s=$(echo "$(now) - $t0" | bc)
	echo "$name $s" >> "$WORK/results"
	log "$name: $s s"
}

: > "$WORK/results"
for r in $(seq 1 "$ROUNDS"); do
	log "round $r"
	rm -rf "$WORK/rsync" "$WORK/dest"
	timed rsync1 rsync -a "$MNT/" "$WORK/rsync/"
	timed full "$BIN" backup --progress=never "$META" "$WORK/dest" --name "r$r-full"
	touch "$WORK/mark"
	sleep 0.01
	change "$r"
	find "$WORK/objects/chunks" -type f -newer "$WORK/mark" >"$WORK/changed"
	timed rsync2 rsync -a "$MNT/" "$WORK/rsync/"
	timed incr "$BIN" backup --progress=never "$META" "$WORK/dest" --name "r$r-incr"
	timed read sh -c 'xargs -P8 -n32 cat <"$1" >/dev/null' read "$WORK/changed"
	rm -rf "$WORK/floor" && mkdir -p "$WORK/floor"
	timed floor sh -c 'xargs -P8 -n32 cp -t "$1" <"$2" && sync -f "$1"' floor "$WORK/floor" "$WORK/changed"
	log "floor: $(wc -l <"$WORK/changed") blocks, $(du -sh "$WORK/floor" | cut -f1)"
done

median() { grep "^$1 " "$WORK/results" | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
r1=$(median rsync1); full=$(median full); r2=$(median rsync2); incr=$(median incr); floor=$(median floor); rd=$(median read)
printf '\n%d files, %d MiB, %d rounds (medians, seconds)\n' "$FILES" "$MIB" "$ROUNDS"
printf '  rsync -a, first pass    %8.2f\n' "$r1"
printf '  shoal backup, full      %8.2f   full/rsync1  = %.2f (goal <= 1.5)\n' "$full" "$(echo "$full / $r1" | bc -l)"
printf '  rsync -a, second pass   %8.2f\n' "$r2"
printf '  shoal backup, incr      %8.2f   rsync2/incr  = %.1f (goal >= 10)\n' "$incr" "$(echo "$r2 / $incr" | bc -l)"
printf '  read the change (cold)  %8.2f   rsync2/read  = %.1f (no backup can beat this)\n' "$rd" "$(echo "$r2 / $rd" | bc -l)"
printf '  copy it, synced         %8.2f   rsync2/floor = %.1f (no durable backup can beat this)\n' "$floor" "$(echo "$r2 / $floor" | bc -l)"
printf '  shoal backup, incr      %8.2f   incr/floor   = %.1f\n' "$incr" "$(echo "$incr / $floor" | bc -l)"
