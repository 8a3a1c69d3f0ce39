#!/usr/bin/env bash
# scripts/minio.sh — a MinIO server on loopback for Shoal's S3 tests.
#
#   eval "$(scripts/minio.sh start)"   build if needed, start, wait, print env
#   scripts/minio.sh stop              stop and delete the data
#   scripts/minio.sh restart           stop and start again, keeping the data
#                                      (tests restart S3 under a busy mount)
#   scripts/minio.sh env               print the export lines again
#   scripts/minio.sh status            exit 0 if the server answers
#
# stdout carries only `export ...` lines, so `eval "$(... start)"` works;
# progress and errors go to stderr.
#
# The binary is built once per machine with `go install` into
# ${SHOAL_CACHE:-/var/cache/shoal}/bin, outside the repository, so later CI
# runs on the same machine reuse it (the build takes minutes on 2 cores).
# The server listens on 127.0.0.1 only, with a fixed test account; its data
# and log live in $SHOAL_MINIO_DIR (default ${TMPDIR:-/tmp}/shoal-minio-PORT).
#
# Settings (environment): SHOAL_CACHE, SHOAL_MINIO_PORT (19000),
# SHOAL_MINIO_DIR, SHOAL_MINIO_BUCKET (shoal-test). The port is below
# Linux's ephemeral range, as in services.sh.
set -euo pipefail

MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
CACHE_BIN=${SHOAL_CACHE:-/var/cache/shoal}/bin
MINIO=$CACHE_BIN/minio
PORT=${SHOAL_MINIO_PORT:-19000}
ADDR=127.0.0.1:$PORT
STATE=${SHOAL_MINIO_DIR:-${TMPDIR:-/tmp}/shoal-minio-$PORT}
BUCKET=${SHOAL_MINIO_BUCKET:-shoal-test}
USER_KEY=shoaltest
SECRET_KEY=shoaltest-secret-key

log() { echo "minio.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

# ensure_binary builds MinIO into the cache directory unless it is there.
ensure_binary() {
	if [[ -x $MINIO && $(cat "$MINIO.version" 2>/dev/null) == "$MINIO_VERSION" ]]; then
		return
	fi
	if [[ -x $MINIO && ! -e $MINIO.version ]] && "$MINIO" --version >/dev/null 2>&1; then
		# Built by hand with the command below before stamps existed.
		echo "$MINIO_VERSION" >"$MINIO.version"
		return
	fi
	command -v go >/dev/null || die "go is not installed; it is needed to build MinIO"
	mkdir -p "$CACHE_BIN" || die "cannot create $CACHE_BIN (set SHOAL_CACHE to a writable directory)"
	log "building MinIO $MINIO_VERSION into $CACHE_BIN (several minutes, once per machine)"
	local tmp
	tmp=$(mktemp -d "$CACHE_BIN/.build.XXXXXX")
	# Build into a temp dir and rename, so a killed build leaves no half binary.
	if ! (cd / && GOBIN=$tmp go install "github.com/minio/minio@$MINIO_VERSION") >&2; then
		rm -rf "$tmp"
		die "building MinIO failed"
	fi
	mv -f "$tmp/minio" "$MINIO"
	echo "$MINIO_VERSION" >"$MINIO.version"
	rm -rf "$tmp"
}

# ensure_curl installs curl when missing (fresh CI machines).
ensure_curl() {
	command -v curl >/dev/null && return
	log "installing curl"
	if command -v apt-get >/dev/null; then
		(apt-get update -qq && apt-get install -y -qq curl) >&2 || die "apt-get install curl failed"
	else
		die "curl is not installed"
	fi
}

running_pid() {
	local pid
	[[ -f $STATE/pid ]] || return 1
	pid=$(<"$STATE/pid")
	# The comm check guards against a stale pid file whose pid was reused.
	[[ -n $pid ]] && kill -0 "$pid" 2>/dev/null &&
		[[ $(cat "/proc/$pid/comm" 2>/dev/null) == minio ]] && echo "$pid"
}

healthy() {
	curl -fsS -o /dev/null --max-time 2 "http://$ADDR/minio/health/ready" 2>/dev/null
}

# wait_ready polls the health endpoint for up to 60 s.
wait_ready() {
	local pid=$1 i
	for ((i = 0; i < 240; i++)); do
		if healthy; then
			return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 30 "$STATE/log" >&2 || true
			die "MinIO exited during startup (log: $STATE/log)"
		fi
		sleep 0.25
	done
	tail -n 30 "$STATE/log" >&2 || true
	die "MinIO did not become ready on $ADDR within 60 s (log: $STATE/log)"
}

# make_bucket creates the test bucket with a SigV4-signed PUT (curl does
# the signing); an existing bucket is fine.
make_bucket() {
	local code i
	# A MinIO that answers its health check may still refuse requests for
	# a moment (503, "Server not initialized yet"): retry for up to 30 s.
	for ((i = 0; i < 120; i++)); do
		code=$(curl -sS -o "$STATE/mkbucket.out" -w '%{http_code}' --max-time 10 \
			--aws-sigv4 "aws:amz:us-east-1:s3" --user "$USER_KEY:$SECRET_KEY" \
			-X PUT "http://$ADDR/$BUCKET") || code=000
		case $code in
		200 | 409) return 0 ;;
		000 | 5??) sleep 0.25 ;;
		*) break ;;
		esac
	done
	die "creating bucket $BUCKET: HTTP $code: $(cat "$STATE/mkbucket.out" 2>/dev/null)"
}

launch() {
	if healthy; then
		die "something else already answers on $ADDR (not our server: no live pid in $STATE/pid)"
	fi
	mkdir -p "$STATE/data"
	log "starting MinIO on $ADDR (data $STATE/data, log $STATE/log)"
	MINIO_ROOT_USER=$USER_KEY MINIO_ROOT_PASSWORD=$SECRET_KEY \
		MINIO_BROWSER=off MINIO_UPDATE=off MINIO_PROMETHEUS_AUTH_TYPE=public \
		setsid "$MINIO" server --quiet --address "$ADDR" "$STATE/data" \
		>>"$STATE/log" 2>&1 </dev/null &
	echo $! >"$STATE/pid"
	wait_ready $!
}

print_env() {
	echo "export SHOAL_TEST_S3=http://$ADDR/$BUCKET"
	echo "export AWS_ACCESS_KEY_ID=$USER_KEY AWS_SECRET_ACCESS_KEY=$SECRET_KEY"
}

cmd_start() {
	ensure_curl
	if ! running_pid >/dev/null; then
		ensure_binary
		launch
	elif ! healthy; then
		wait_ready "$(running_pid)"
	else
		log "already running (pid $(running_pid))"
	fi
	make_bucket
	print_env
}

# kill_server stops our server and waits for it (SIGKILL after 10 s).
kill_server() {
	local pid i
	pid=$(running_pid) || { log "not running"; return 0; }
	kill "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "pid $pid did not stop; killing it"
		kill -KILL "$pid" 2>/dev/null || true
		sleep 0.2
	fi
	rm -f "$STATE/pid"
}

cmd_stop() {
	kill_server
	rm -rf "$STATE"
	log "stopped"
}

cmd_restart() {
	ensure_curl
	kill_server
	ensure_binary
	launch
	print_env
}

case ${1:-} in
start) cmd_start ;;
stop) cmd_stop ;;
restart) cmd_restart ;;
env) print_env ;;
status) ensure_curl && healthy ;;
*)
	echo "usage: $0 start|stop|restart|env|status" >&2
	exit 2
	;;
esac
