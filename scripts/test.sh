#!/usr/bin/env bash
# scripts/test.sh — THE test command (README, CI): everything, for real.
#
#   bash scripts/test.sh
#
# Run it as root (a fresh Debian has no sudo; elsewhere prefix `sudo`, as
# the README says). On a fresh Debian 12 machine it installs what the tests need
# (fuse3, bindfs, PostgreSQL, Redis, the benchmark tools, a C compiler for
# SQLite; Go itself must be installed), starts the real
# servers (scripts/services.sh: PostgreSQL + Redis; scripts/minio.sh: MinIO)
# on loopback, and runs:
#   gofmt check, go vet ./...
#   go test -race -count=1 ./internal/... ./bench/...   unit and conformance tests
#   go test -fuzz, 5 s per target (FUZZ below)          fuzzed decoders of stored bytes
#   go test -count=1 -timeout 25m ./tests/...           mounted end-to-end tests
# with SHOAL_REQUIRE_SERVICES=1 and SHOAL_REQUIRE_FUSE=1, so a test that
# would skip for a missing server or missing FUSE fails instead. The servers
# are stopped on exit. Every step runs even if an earlier one failed; the
# exit status is non-zero if any failed, and a summary with timings ends
# the output. Budget: under 30 minutes on 2 cores.
#
# Environment:
#   SHOAL_SKIP_INSTALL=1   do not apt-get install (the packages are there)
#   SHOAL_TEST_ONLY=unit|e2e   run only one of the two test steps
#   GOFLAGS, SHOAL_SEED, SHOAL_RANDOM_OPS are passed through to go test.
#   FUZZTIME               time per fuzz target (default 5s)
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1

PACKAGES=(
	ca-certificates curl git gcc libc6-dev pkg-config # Go toolchain, cgo (SQLite)
	fuse3 attr acl psmisc util-linux iproute2         # mounts, xattr and ACL tools, fuser, netns
	bindfs fio bonnie++ postmark qemu-utils           # bench targets and tools
	postgresql-15 redis-server                        # real metadata engines
	chromium                                          # browser tests of HTML reports
	systemd                                           # systemd-analyze verify of contrib/systemd
)
FAILED=()
SUMMARY=()
START=$(date +%s)

log() { printf '\n== [%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { echo "test.sh: $*" >&2; exit 1; }

# step NAME CMD... runs one step, timing it and remembering a failure.
step() {
	local name=$1 t0 rc
	shift
	log "$name: $*"
	t0=$(date +%s)
	"$@"
	rc=$?
	SUMMARY+=("$(printf '%-28s %-4s %4ss' "$name" "$([ $rc = 0 ] && echo ok || echo FAIL)" $(($(date +%s) - t0)))")
	[ $rc = 0 ] || FAILED+=("$name")
	return 0
}

need_root() {
	[ "$(id -u)" = 0 ] && return
	command -v sudo >/dev/null && exec sudo -E bash "$0" "$@"
	die "run as root: the tests mount FUSE file systems and switch users"
}

install_packages() {
	[ "${SHOAL_SKIP_INSTALL:-0}" = 1 ] && return 0
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q && apt-get install -y -q --no-install-recommends "${PACKAGES[@]}"
}

# go_wanted prints the Go version go.mod asks for (its toolchain line wins).
go_wanted() {
	local v
	v=$(awk '$1 == "toolchain" {sub(/^go/, "", $2); print $2}' go.mod)
	[ -n "$v" ] || v=$(awk '$1 == "go" {print $2}' go.mod)
	echo "$v"
}

# version_ge A B: is version A >= B?
version_ge() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1)" = "$2" ]; }

ensure_go() {
	export PATH=/usr/local/go/bin:$PATH:$HOME/go/bin
	local want have
	want=$(go_wanted)
	have=$(go env GOVERSION 2>/dev/null | sed 's/^go//')
	if [ -n "$have" ] && version_ge "$have" "$want"; then return 0; fi
	echo "Go $want or newer is needed (found '${have:-none}'): install it and put it on PATH" >&2
	return 1
}

start_services() {
	if [ -f scripts/services.sh ]; then
		eval "$(sh scripts/services.sh start)" || return 1
		STOP+=("sh scripts/services.sh stop")
	else
		echo "scripts/services.sh missing: PostgreSQL/Redis tests will fail under SHOAL_REQUIRE_SERVICES=1" >&2
	fi
	if [ -f scripts/minio.sh ]; then
		eval "$(bash scripts/minio.sh start)" || return 1
		STOP+=("bash scripts/minio.sh stop")
	else
		echo "scripts/minio.sh missing: S3 tests will fail under SHOAL_REQUIRE_SERVICES=1" >&2
	fi
}

stop_services() {
	local c
	for c in "${STOP[@]}"; do $c >/dev/null 2>&1 || echo "test.sh: '$c' failed" >&2; done
	# The run's scratch dir, unless a mount is still on it.
	case ${TMPDIR:-} in /tmp/sr.*)
		grep -q " $TMPDIR/" /proc/mounts || rm -rf --one-file-system "$TMPDIR" ;;
	esac
}

check_gofmt() {
	local bad
	bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
	[ -z "$bad" ] || { echo "gofmt needed:"; echo "$bad"; return 1; }
}

# no_leftover_mounts fails if a test of this run left a FUSE mount of its
# scratch dirs (under this run's TMPDIR, so another run's live mounts on
# the same machine are none of its business).
no_leftover_mounts() {
	local left
	left=$(awk -v dir="$TMPDIR/shoal-test-" '$3 ~ /^fuse/ && index($2, dir) == 1 {print $2}' /proc/mounts)
	[ -z "$left" ] && return 0
	echo "leftover mounts:"; echo "$left"
	for m in $left; do fusermount3 -u -z "$m"; done
	return 1
}

unit_tests() { go test -race -count=1 -timeout 8m ./internal/... ./bench/...; }
e2e_tests() { go test -count=1 -timeout 25m ./tests/...; }

# FUZZ lists the fuzz targets of the decoders of stored bytes (package
# target); fuzz_tests runs each for FUZZTIME (go test runs one -fuzz
# target per invocation). Their seeds also run in the unit step. A failing
# input is written under the package's testdata/fuzz: commit it with the
# fix, so it stays a regression test.
FUZZ=(
	"./internal/object FuzzChecksumVerify"
	"./internal/object FuzzDecompressFrame"
	"./internal/meta/kvmeta FuzzDecodeAttr"
	"./internal/meta/kvmeta FuzzDecodeDentry"
	"./internal/meta/kvmeta FuzzDecodeChunkValue"
	"./internal/meta/kvmeta FuzzDecodeQuota"
	"./internal/meta/kvmeta FuzzDecodeOrphan"
	"./internal/backup FuzzLoadDump"
)
fuzz_tests() {
	local rc=0 pkg target
	for entry in "${FUZZ[@]}"; do
		read -r pkg target <<<"$entry"
		fuzz_one "$pkg" "$target" || rc=1
	done
	return $rc
}

# fuzz_one runs one target. Go's fuzz coordinator can fail a run with a
# bare "context deadline exceeded" as -fuzztime expires on a loaded
# machine (golang/go#75804; no input failed): such a run, which wrote no
# failing input, is reported and not counted as a failure.
fuzz_one() {
	local pkg=$1 target=$2 out corpus="$1/testdata/fuzz/$2" before after
	before=$(ls "$corpus" 2>/dev/null | wc -l)
	out=$(go test -count=1 -run '^$' -fuzz "^${target}\$" -fuzztime "${FUZZTIME:-5s}" "$pkg" 2>&1)
	local status=$?
	printf '%s\n' "$out" | grep -v '^fuzz: elapsed'
	[ $status -eq 0 ] && return 0
	after=$(ls "$corpus" 2>/dev/null | wc -l)
	if [ "$after" = "$before" ] && grep -q 'context deadline exceeded' <<<"$out" && ! grep -qE 'panic|Failing input' <<<"$out"; then
		echo "fuzz: $target: the coordinator's deadline race (golang/go#75804), no failing input: not a failure"
		return 0
	fi
	return 1
}

main() {
	need_root "$@"
	STOP=()
	trap stop_services EXIT
	step install install_packages
	ensure_go || die "no suitable Go toolchain"
	go version
	export SHOAL_REQUIRE_SERVICES=1 SHOAL_REQUIRE_FUSE=1
	step services start_services
	# The tests' scratch dirs (and their mounts) go under a directory of
	# this run's own, kept short (a mount's control socket path embeds it)
	# and searchable by every user (tests run helpers as other uids).
	TMPDIR=$(mktemp -d /tmp/sr.XXXXXX) && chmod 755 "$TMPDIR" || die "cannot make a scratch directory in /tmp"
	export TMPDIR
	step gofmt check_gofmt
	step vet go vet ./...
	[ "${SHOAL_TEST_ONLY:-unit}" = unit ] && step unit unit_tests
	[ "${SHOAL_TEST_ONLY:-unit}" = unit ] && step fuzz fuzz_tests
	[ "${SHOAL_TEST_ONLY:-e2e}" = e2e ] && step e2e e2e_tests
	step leftover-mounts no_leftover_mounts
	log "summary (total $(($(date +%s) - START))s)"
	printf '  %s\n' "${SUMMARY[@]}" >&2
	if [ ${#FAILED[@]} -gt 0 ]; then
		echo "FAILED: ${FAILED[*]}" >&2
		exit 1
	fi
	echo "all steps passed" >&2
}

main "$@"
