#!/usr/bin/env bash
# bench/peers.sh — issue 18's benchmark: Shoal beside its peers, one run.
#
# Measures, on one machine, with every server on this machine and all file
# data in a local directory:
#   local         a directory on the local disk (the yardstick)
#   shoal-sqlite  Shoal, SQLite metadata            (--storage file)
#   shoal-redis   Shoal, Redis metadata             (--storage file)
#   shoal-pg      Shoal, PostgreSQL metadata        (--storage file)
#   jfs-redis     JuiceFS v1.4.1 on the same Redis  (--storage file)
#   jfs-pg        JuiceFS v1.4.1 on the same PostgreSQL
#   moosefs       MooseFS 3.0 from Debian: master and one chunkserver (data
#                 on the local disk) in a network namespace, mfsmount here
# the seed tests of the issue, run by `shoal bench` so that every target
# gets identical work in interleaved rounds (medians over ROUNDS):
#   10k files: create/s, stat/s, rename/s, unlink/s   (mass, empty files)
#   100k-entry directory: readdir and stat-every-entry (hugedir)
#   PostMark, its seed configuration (shoal bench's postmark defaults:
#     5,000 files of 1 KiB–256 KiB, 10,000 transactions, 8 KiB blocks,
#     biases 7/3, unbuffered; see docs/bench.md)
#   10k random-size files (1–64 KiB): write and cold read MiB/s (mass, sized)
#   iozone 5×100 MiB, 4 KiB records: write KiB/s (shoal bench's iozone, with
#     close timed: every target here flushes on close; iozone3 is not in
#     Debian, and shoal bench's figures are checked against the real tools)
#   4 parallel creators on one mount, FILES/4 each: creates/s (hugedir
#     --clients 4, each in its own directory)
# then the same workloads (not the creators) with four mounts of each
# volume working at once (four mount processes, one client in its own
# directory on each: 4× the work) and the ratio of the times; and the
# latency of a small durable change (append 4 KiB, fsync; p50 and p99).
#
# Usage (as root: mounts, drop_caches, network namespace):
#   bash bench/peers.sh                                  # full run
#   FILES=1000 DIRENTRIES=5000 ROUNDS=1 bash bench/peers.sh   # quick look
#   SKIP_PEERS=1 bash bench/peers.sh                     # Shoal and local only
# Environment:
#   FILES (10000)        files of the mass workload, and of the 4 creators
#   DIRENTRIES (100000)  entries of the huge directory
#   ROUNDS (2)           interleaved rounds
#   FSYNCS (200)         append+fsync pairs per target and round
#   PM_FILES (5000), PM_TX (10000)   PostMark pool and transactions
#   IOZONE_SIZE (100MiB) iozone file size (5 files per client)
#   FOUR=0               skip the four-mounts run
#   FOUR_ROUNDS (ROUNDS) rounds of the four-mounts run
#   SKIP_PEERS=1         measure no JuiceFS and no MooseFS
#   ONLY="T1 T2 ..."     measure only these targets (names as above; the
#                        others are reported as skipped)
#   PHASES ("fsync one par four")  which parts to run: fsync latency, the
#                        seed tests on one mount, the 4 creators, 4 mounts
#   WORKLOADS ("iozone postmark mass hugedir")  seed tests of one and four
#   JFS_REDIS_DB (15)    the Redis database JuiceFS uses (emptied at start if
#                        it holds nothing but this benchmark's volume)
#   BENCH_DIR            work dir (default /var/tmp/shoal-peers); its
#                        results/ holds the JSON and the tables afterwards.
#                        The run owns it: it unmounts every FUSE mount
#                        under it and replaces its bin/ and target
#                        directories, so keep nothing else there
#   JUICEFS_BIN          use this juicefs binary instead of building v1.4.1
#                        (cached in /var/cache/shoal/bin)
#   KEEP=1               keep the volumes' data
#   BENCH_NAME (peers)   names of the schemas, namespaces and databases it
#                        makes: give each of two runs at once its own, with
#                        its own BENCH_DIR and JFS_REDIS_DB; only one of
#                        them may measure MooseFS (its network namespace,
#                        shoal-peers, has a fixed name, and a run without
#                        MooseFS among its targets leaves it alone)
# It starts PostgreSQL and Redis (scripts/services.sh) if needed and leaves
# them running; installs MooseFS with apt and builds JuiceFS (minutes, once)
# if missing. A peer that cannot be installed, built or mounted is reported
# as such and its column is left empty. Everything it made (mounts,
# daemons, namespace, schema, database, keys) is removed at the end, also on
# Ctrl-C, and a run left half-done is cleaned up by the next one.
set -euo pipefail

FILES=${FILES:-10000}
DIRENTRIES=${DIRENTRIES:-100000}
ROUNDS=${ROUNDS:-2}
FSYNCS=${FSYNCS:-200}
PM_FILES=${PM_FILES:-5000}
PM_TX=${PM_TX:-10000}
IOZONE_SIZE=${IOZONE_SIZE:-100MiB}
FOUR=${FOUR:-1}
ONLY=${ONLY:-}
PHASES=${PHASES:-fsync one par four}
WORKLOADS=${WORKLOADS:-iozone postmark mass hugedir}
FOUR_ROUNDS=${FOUR_ROUNDS:-$ROUNDS}
SKIP_PEERS=${SKIP_PEERS:-0}
JFS_VERSION=v1.4.1
JFS_REDIS_DB=${JFS_REDIS_DB:-15}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${BENCH_DIR:-/var/tmp/shoal-peers}
RES=$WORK/results
CACHE=/var/cache/shoal/bin
NAME=${BENCH_NAME:-peers} # Shoal's Redis namespace and PostgreSQL schema; JuiceFS's database is jfs_peers
NETNS=shoal-peers
MFS_OWNED=0 # this run set up (and so tears down) the MooseFS namespace
VETH_HOST=shoalpeers0 VETH_NS=shoalpeers1
HOST_IP=10.250.0.1 NS_IP=10.250.0.2
TARGETS=(local shoal-sqlite shoal-redis shoal-pg jfs-redis jfs-pg moosefs)
declare -A LABEL=([local]=local [shoal-sqlite]="Shoal SQLite" [shoal-redis]="Shoal Redis" [shoal-pg]="Shoal PG"
	[jfs-redis]="JuiceFS Redis" [jfs-pg]="JuiceFS PG" [moosefs]="MooseFS")
declare -A STATUS=()
SHOAL=/bin/false JFS=/bin/false CB=/bin/false
export PATH=/usr/local/go/bin:$PATH

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
skip() { # target reason...
	local t=$1
	shift
	STATUS[$t]="$*"
	log "SKIPPING ${LABEL[$t]}: $*"
}
ok() { [ "${STATUS[$1]}" = ok ]; }
phase() { [[ " $PHASES " == *" $1 "* ]]; }

preflight() {
	[ "$(id -u)" = 0 ] || die "run as root (mounts, drop_caches and a network namespace need it)"
	[ -e /dev/fuse ] || die "no /dev/fuse"
	local need="" c
	for c in fusermount3:fuse3 bc:bc ip:iproute2 redis-cli:redis-tools; do
		command -v "${c%%:*}" >/dev/null || need="$need ${c#*:}"
	done
	[ -z "$need" ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -q $need >&2
}

# --- building ---------------------------------------------------------------

build_shoal() {
	mkdir -p "$WORK/bin"
	log "building shoal and corebench from $ROOT"
	(cd "$ROOT" && go build -o "$WORK/bin/shoal" ./cmd/shoal && go build -o "$WORK/bin/corebench" ./bench/cmd/corebench) ||
		die "building shoal failed"
	SHOAL=$WORK/bin/shoal CB=$WORK/bin/corebench
}

# build_juicefs builds JuiceFS from its Go module (with its own go.mod, so
# its replace directives hold) into the cache, once. The tags leave out the
# object stores and engines not measured here, which saves build time only.
build_juicefs() {
	JFS=${JUICEFS_BIN:-$CACHE/juicefs-$JFS_VERSION}
	[ -x "$JFS" ] && return 0
	local b=/var/tmp/jfsbuild dir
	log "building JuiceFS $JFS_VERSION from the Go module proxy (several minutes, once; log $b/build.log)"
	mkdir -p "$b" "$CACHE"
	dir=$(cd "$b" && go mod download -json "github.com/juicedata/juicefs@$JFS_VERSION" 2>>"$b/build.log" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p') || true
	[ -n "$dir" ] || { skip_jfs "go mod download github.com/juicedata/juicefs@$JFS_VERSION failed (see $b/build.log)"; return 1; }
	rm -rf "$b/src" && cp -r "$dir" "$b/src" && chmod -R u+w "$b/src"
	(cd "$b/src" && go build -ldflags "-s -w" -o "$JFS.tmp" \
		-tags nogateway,nowebdav,nocos,nobos,nohdfs,noibmcos,noobs,nooss,noqingstor,nosftp,noswift,noazure,nogs,noufile,nob2,nonfs,nodragonfly,nosqlite,nomysql,notikv,nobadger,noetcd,nocifs,nostorj,noqiniu,notos,noks3 \
		. >>"$b/build.log" 2>&1) || { skip_jfs "building JuiceFS $JFS_VERSION failed (see $b/build.log)"; return 1; }
	mv "$JFS.tmp" "$JFS"
}

skip_jfs() { skip jfs-redis "$@"; skip jfs-pg "$@"; }

install_moosefs() {
	command -v mfsmaster >/dev/null && command -v mfschunkserver >/dev/null && command -v mfsmount >/dev/null && return 0
	log "installing MooseFS from Debian (moosefs-master moosefs-chunkserver moosefs-client), not started as services"
	local made=""
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && made=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		moosefs-master moosefs-chunkserver moosefs-client >&2 || true
	[ -z "$made" ] || rm -f /usr/sbin/policy-rc.d
	command -v mfsmaster >/dev/null && command -v mfsmount >/dev/null ||
		{ skip moosefs "apt-get install moosefs-master moosefs-chunkserver moosefs-client failed"; return 1; }
}

# --- servers and volumes ------------------------------------------------------

servers() {
	eval "$(sh "$ROOT/scripts/services.sh" start)"
	PSQL=$(ls /usr/lib/postgresql/*/bin/psql | head -1)
	# The password goes through the environment, not argv.
	PG_PASS=$(echo "$SHOAL_TEST_PG" | sed -n 's|^postgres://[^:]*:\([^@]*\)@.*|\1|p')
	PG_BASE=$(echo "$SHOAL_TEST_PG" | sed 's|^postgres://\([^:]*\):[^@]*@|postgres://\1@|')
	REDIS_HOSTPORT=$(echo "$SHOAL_TEST_REDIS" | sed 's|^redis://\([^/]*\)/.*|\1|')
	local fs
	fs=$(redis-cli -u "$SHOAL_TEST_REDIS" config get appendfsync | tail -1)
	[ "$(redis-cli -u "$SHOAL_TEST_REDIS" config get appendonly | tail -1)" = yes ] && [ "$fs" = everysec ] ||
		log "warning: Redis is not AOF everysec (appendfsync=$fs): figures are not comparable with the docs"
}

psql_q() { PGPASSWORD=$PG_PASS PGOPTIONS=--client-min-messages=warning "$PSQL" -X -q -v ON_ERROR_STOP=1 "$PG_BASE" -tA "$@"; }

# redis_del_ns deletes the keys matching a pattern inside Redis: the keys
# hold binary bytes that do not survive a trip through a shell pipe.
redis_del_ns() { # pattern
	redis-cli -u "$SHOAL_TEST_REDIS" eval "local c, n = '0', 0
		repeat
			local r = redis.call('SCAN', c, 'MATCH', ARGV[1], 'COUNT', 1000)
			c = r[1]
			for _, k in ipairs(r[2]) do n = n + redis.call('DEL', k) end
		until c == '0'
		return n" 0 "$1" >/dev/null
}

# jfs_redis_db_ours reports whether JuiceFS's Redis database is empty or
# holds only this benchmark's volume, so that emptying it harms nobody.
jfs_redis_db_ours() {
	local r="redis-cli -h ${REDIS_HOSTPORT%:*} -p ${REDIS_HOSTPORT#*:} -n $JFS_REDIS_DB"
	[ "$($r dbsize)" = 0 ] || $r get setting | grep -q "\"Name\": *\"$NAME-redis\""
}

# reset_engines removes this benchmark's metadata from a previous run.
reset_engines() {
	psql_q -c "DROP SCHEMA IF EXISTS $NAME CASCADE" || true
	psql_q -c "DROP DATABASE IF EXISTS jfs_$NAME" || true
	redis_del_ns "{$NAME}*"
	if jfs_redis_db_ours; then
		redis-cli -h "${REDIS_HOSTPORT%:*}" -p "${REDIS_HOSTPORT#*:}" -n "$JFS_REDIS_DB" flushdb >/dev/null
	else
		JFS_DB_FOREIGN=1
	fi
}

shoal_url() {
	case $1 in
	shoal-sqlite) echo "sqlite://$WORK/shoal-sqlite/meta.db" ;;
	shoal-redis) echo "redis://$REDIS_HOSTPORT/0?ns=$NAME" ;;
	shoal-pg) echo "$PG_BASE&search_path=$NAME" ;;
	esac
}

jfs_url() {
	case $1 in
	jfs-redis) echo "redis://$REDIS_HOSTPORT/$JFS_REDIS_DB" ;;
	jfs-pg) echo "$(echo "$PG_BASE" | sed "s|/[^/?]*?|/jfs_$NAME?|")" ;;
	esac
}

format_shoal() { # target
	local t=$1
	mkdir -p "$WORK/$t"
	[ "$t" != shoal-pg ] || psql_q -c "CREATE SCHEMA $NAME"
	SHOAL_META_PASSWORD=$PG_PASS "$SHOAL" format "$(shoal_url "$t")" --storage file --bucket "$WORK/$t/bucket" \
		--name "$NAME-${t#shoal-}" >"$WORK/$t/format.log" 2>&1 || { cat "$WORK/$t/format.log" >&2; die "shoal format $t failed"; }
}

format_jfs() { # target
	local t=$1
	mkdir -p "$WORK/$t"
	if [ "$t" = jfs-redis ] && [ -n "${JFS_DB_FOREIGN:-}" ]; then
		skip "$t" "Redis database $JFS_REDIS_DB holds other data; choose a free one with JFS_REDIS_DB"
		return
	fi
	[ "$t" != jfs-pg ] || psql_q -c "CREATE DATABASE jfs_$NAME"
	# Trash off, as Shoal's default and as set for MooseFS: every target deletes for real.
	META_PASSWORD=$PG_PASS "$JFS" format --storage file --bucket "$WORK/$t/bucket/" --trash-days 0 \
		"$(jfs_url "$t")" "$NAME-${t#jfs-}" >"$WORK/$t/format.log" 2>&1 ||
		{ tail -5 "$WORK/$t/format.log" >&2; skip "$t" "juicefs format failed: $(tail -1 "$WORK/$t/format.log")"; }
}

# mount_point TARGET I -> the I-th mount point of a target
mount_point() { echo "$WORK/$1/mnt$2"; }

mount_one() { # target i
	local t=$1 i=$2 mp
	mp=$(mount_point "$t" "$i")
	mkdir -p "$mp"
	mountpoint -q "$mp" && return 0
	case $t in
	shoal-*)
		SHOAL_META_PASSWORD=$PG_PASS "$SHOAL" mount "$(shoal_url "$t")" "$mp" --background --log "$WORK/$t/mount$i.log" \
			>>"$WORK/$t/mount$i.log" 2>&1 ;;
	jfs-*)
		META_PASSWORD=$PG_PASS "$JFS" mount -d --no-usage-report --cache-dir "$WORK/$t/cache$i" \
			--log "$WORK/$t/mount$i.log" "$(jfs_url "$t")" "$mp" >>"$WORK/$t/mount$i.log" 2>&1 ;;
	moosefs)
		mfsmount "$mp" -H "$NS_IP" -P 9421 >>"$WORK/moosefs/mount$i.log" 2>&1 ;;
	esac || true
	for _ in $(seq 100); do mountpoint -q "$mp" && return 0; sleep 0.1; done
	tail -5 "$WORK/$t/mount$i.log" >&2
	return 1
}

# --- MooseFS in a network namespace ---------------------------------------------

# The MooseFS master does not serve on loopback addresses, so master and
# chunkserver run in a namespace of their own, reached over a veth pair on
# a private /30 made here; the traffic never leaves this machine.
netns_up() {
	ip netns add "$NETNS"
	ip link add "$VETH_HOST" type veth peer name "$VETH_NS"
	ip link set "$VETH_NS" netns "$NETNS"
	ip addr add "$HOST_IP/30" dev "$VETH_HOST"
	ip link set "$VETH_HOST" up
	ip -n "$NETNS" addr add "$NS_IP/30" dev "$VETH_NS"
	ip -n "$NETNS" link set "$VETH_NS" up
	ip -n "$NETNS" link set lo up
}

# in_netns runs a command in the namespace's network only. Not `ip netns
# exec`: that also gives the command a copy of this machine's mounts, and
# a daemon left running in it (the MooseFS master and chunkserver) keeps
# every FUSE file system mounted at that moment alive after it is
# unmounted here: their servers (anyone's, a test suite's) never exit.
in_netns() { nsenter --net="/run/netns/$NETNS" -- "$@"; }

netns_down() {
	ip link del "$VETH_HOST" 2>/dev/null || true
	ip netns del "$NETNS" 2>/dev/null || true
}

mfs_configs() {
	local d=$WORK/moosefs
	mkdir -p "$d/master" "$d/cs" "$d/hdd"
	cat >"$d/mfsmaster.cfg" <<-EOF
		WORKING_USER = root
		WORKING_GROUP = root
		DATA_PATH = $d/master
		EXPORTS_FILENAME = $d/mfsexports.cfg
		TOPOLOGY_FILENAME = $d/mfstopology.cfg
		MATOML_LISTEN_HOST = $NS_IP
		MATOCS_LISTEN_HOST = $NS_IP
		MATOCL_LISTEN_HOST = $NS_IP
	EOF
	echo '*	/	rw,alldirs,admin,maproot=0:0' >"$d/mfsexports.cfg"
	: >"$d/mfstopology.cfg"
	cat >"$d/mfschunkserver.cfg" <<-EOF
		WORKING_USER = root
		WORKING_GROUP = root
		DATA_PATH = $d/cs
		HDD_CONF_FILENAME = $d/mfshdd.cfg
		MASTER_HOST = $NS_IP
		BIND_HOST = $NS_IP
		CSSERV_LISTEN_HOST = $NS_IP
	EOF
	echo "$d/hdd" >"$d/mfshdd.cfg"
	cp /var/lib/mfs/metadata.mfs.empty "$d/master/metadata.mfs"
}

setup_moosefs() {
	local d=$WORK/moosefs
	mfs_configs
	netns_up || { skip moosefs "cannot create network namespace $NETNS with a veth pair"; return; }
	in_netns mfsmaster -c "$d/mfsmaster.cfg" start >"$d/master.log" 2>&1 ||
		{ skip moosefs "mfsmaster did not start: $(tail -1 "$d/master.log")"; return; }
	in_netns mfschunkserver -c "$d/mfschunkserver.cfg" start >"$d/cs.log" 2>&1 ||
		{ skip moosefs "mfschunkserver did not start: $(tail -1 "$d/cs.log")"; return; }
	sleep 2 # the chunkserver registers with the master
	mount_one moosefs 0 || { skip moosefs "mfsmount failed: $(tail -1 "$d/mount0.log")"; return; }
	# One copy (one chunkserver) and no trash, as for the others.
	mfssetgoal 1 "$(mount_point moosefs 0)" >/dev/null && mfssettrashtime 0 "$(mount_point moosefs 0)" >/dev/null
}

stop_moosefs() {
	local d=$WORK/moosefs
	if ip netns list 2>/dev/null | grep -qw "$NETNS"; then
		[ ! -f "$d/mfschunkserver.cfg" ] || in_netns mfschunkserver -c "$d/mfschunkserver.cfg" stop >/dev/null 2>&1 || true
		[ ! -f "$d/mfsmaster.cfg" ] || in_netns mfsmaster -c "$d/mfsmaster.cfg" stop >/dev/null 2>&1 || true
	fi
	netns_down
}

# --- setup and cleanup --------------------------------------------------------------

umount_all() {
	local mp
	for mp in $(awk -v w="$WORK/" 'index($2, w) == 1 && $3 ~ /^fuse/ {print $2}' /proc/mounts | sort -r); do
		case $mp in
		*/shoal-*) "$SHOAL" umount "$mp" 2>/dev/null ;;
		*/jfs-*) "$JFS" umount "$mp" 2>/dev/null ;;
		*) umount "$mp" 2>/dev/null ;;
		esac || fusermount3 -u -z "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null || true
	done
}

cleanup() {
	set +e
	trap - INT TERM EXIT
	log "cleaning up"
	umount_all
	[ "$MFS_OWNED" = 0 ] || stop_moosefs
	[ -z "${PSQL:-}" ] || reset_engines
	[ "${KEEP:-0}" = 1 ] || for t in "${TARGETS[@]}"; do rm -rf "${WORK:?}/$t"; done
	rm -rf "$WORK/bin"
}

setup() {
	local t
	umount_all # a previous run's, if it was killed
	reset_engines
	for t in "${TARGETS[@]}"; do rm -rf "${WORK:?}/$t"; done
	for t in "${TARGETS[@]}"; do STATUS[$t]=ok; done
	if [ -n "$ONLY" ]; then
		for t in "${TARGETS[@]}"; do
			[[ " $ONLY " == *" $t "* ]] || skip "$t" "not in ONLY"
		done
	fi
	# The network namespace has one fixed name: a run that measures no
	# MooseFS leaves it (and another run's MooseFS in it) alone.
	if ok moosefs; then
		MFS_OWNED=1
		stop_moosefs # a previous run's, if it was killed
	fi
	if [ "$SKIP_PEERS" = 1 ]; then
		for t in jfs-redis jfs-pg moosefs; do skip "$t" "SKIP_PEERS=1"; done
	else
		if ok jfs-redis || ok jfs-pg; then build_juicefs || true; fi
		! ok moosefs || install_moosefs || true
	fi
	mkdir -p "$WORK/local"
	for t in shoal-sqlite shoal-redis shoal-pg; do
		ok "$t" || continue
		format_shoal "$t"
		mount_one "$t" 0 || die "mount of $t failed"
	done
	for t in jfs-redis jfs-pg; do
		ok "$t" || continue
		format_jfs "$t"
		ok "$t" || continue
		mount_one "$t" 0 || skip "$t" "juicefs mount failed: $(tail -1 "$WORK/$t/mount0.log")"
	done
	! ok moosefs || setup_moosefs
	: >"$RES/targets.tsv"
	for t in "${TARGETS[@]}"; do printf '%s\t%s\t%s\n' "$t" "${LABEL[$t]}" "${STATUS[$t]}" >>"$RES/targets.tsv"; done
}

# --- measuring ------------------------------------------------------------------

# dirs TARGET N SUB -> the target's directories for N mounts, joined by commas
dirs() {
	local t=$1 n=$2 sub=$3 i out=""
	for ((i = 0; i < n; i++)); do
		local d
		if [ "$t" = local ]; then d=$WORK/local/$sub$i; else d=$(mount_point "$t" "$i")/$sub; fi
		mkdir -p "$d"
		out=$out${out:+,}$d
	done
	echo "$out"
}

# bench_targets N SUB -> shoal bench's NAME=DIR[,DIR...] arguments
bench_targets() {
	local t
	for t in "${TARGETS[@]}"; do
		ok "$t" && echo "$t=$(dirs "$t" "$1" "$2")"
	done
}

run_bench() { # out.json n-mounts sub workloads... -- flags...
	local out=$1 n=$2 sub=$3
	shift 3
	local -a wl=() fl=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do wl+=("$1"); shift; done
	[ $# -eq 0 ] || shift
	fl=("$@")
	# shellcheck disable=SC2046
	"$SHOAL" bench "${wl[@]}" --json --progress=always --rounds "$ROUNDS" "${fl[@]}" \
		$(bench_targets "$n" "$sub") >"$RES/$out" 2>>"$RES/bench.log" || {
		local rc=$?
		[ $rc = 1 ] && [ -s "$RES/$out" ] || die "shoal bench failed (exit $rc), see $RES/bench.log"
		log "some measurements failed; they show as 'err' (see $RES/bench.log and $RES/$out)"
	}
}

seed_flags() {
	echo --mass-files "$FILES" --hugedir-entries "$DIRENTRIES" \
		--postmark-files "$PM_FILES" --postmark-transactions "$PM_TX" \
		--iozone-workers 5 --iozone-size "$IOZONE_SIZE" --iozone-record 4KiB --iozone-tests write --include-close
}

phase_fsync() {
	local r t d
	: >"$RES/fsync.txt"
	for ((r = 1; r <= ROUNDS; r++)); do
		for t in "${TARGETS[@]}"; do
			ok "$t" || continue
			d=$(dirs "$t" 1 fsync)
			"$CB" fsync "$d/f.r$r" "$FSYNCS" | sed "s/^/$t /" >>"$RES/fsync.txt" || log "fsync on $t failed"
		done
	done
}

main() {
	preflight
	mkdir -p "$WORK" "$RES"
	rm -f "$RES"/*.json "$RES/bench.log" "$RES/fsync.txt" "$RES/peers.md"
	trap cleanup EXIT
	trap 'log interrupted; exit 130' INT TERM
	build_shoal
	servers
	setup
	local start=$SECONDS t i
	LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
	log "work dir $WORK; FILES=$FILES DIRENTRIES=$DIRENTRIES ROUNDS=$ROUNDS; load $(cut -d' ' -f1-3 /proc/loadavg)"
	if phase fsync; then
		log "fsync latency ($FSYNCS × append 4 KiB + fsync per target and round)"
		phase_fsync
	fi
	if phase one; then
		log "seed tests, one mount each (progress in $RES/bench.log)"
		# shellcheck disable=SC2046
		run_bench one.json 1 one $WORKLOADS -- $(seed_flags)
	fi
	if phase par; then
		log "4 parallel creators on one mount"
		run_bench par.json 1 par hugedir -- --clients 4 --hugedir-entries "$((FILES / 4))"
	fi
	if [ "$FOUR" = 1 ] && phase four; then
		log "four mounts of each volume at once"
		for t in "${TARGETS[@]}"; do
			[ "$t" != local ] && ok "$t" || continue
			for i in 1 2 3; do mount_one "$t" "$i" || die "mount $i of $t failed"; done
		done
		# shellcheck disable=SC2046
		run_bench four.json 4 four $WORKLOADS -- --clients 4 $(seed_flags) --rounds "$FOUR_ROUNDS"
	fi
	report "$((SECONDS - start))" | tee "$RES/peers.md"
}

report() { # seconds
	echo
	echo "Shoal and its peers — $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cpus, $(uname -r), took $(($1 / 60)) min"
	echo "FILES=$FILES DIRENTRIES=$DIRENTRIES ROUNDS=$ROUNDS FOUR_ROUNDS=$FOUR_ROUNDS FSYNCS=$FSYNCS PostMark ${PM_FILES} files/${PM_TX} tx, iozone 5×$IOZONE_SIZE;" \
		"PostgreSQL $("$PSQL" -V | awk '{print $3}') (fsync=off), Redis $(redis-server --version | awk '{print $3}' | sed 's/v=//') (AOF everysec)," \
		"JuiceFS $(ok jfs-redis || ok jfs-pg && "$JFS" version | awk '{print $3}' || echo -), MooseFS $(ok moosefs && mfsmaster -v | awk '{print $2}' || echo -)"
	echo "load average at the start: $LOAD0; at the end: $(cut -d' ' -f1-3 /proc/loadavg) (above ~2: other jobs shared the 2 cores)"
	"$CB" peers "$RES"
}

main "$@"
