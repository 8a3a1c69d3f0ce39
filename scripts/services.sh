#!/bin/sh
# services.sh — run PostgreSQL and Redis on loopback for Shoal's tests, as
# plain processes (no systemd needed), installing them with apt if missing.
#
#   eval "$(scripts/services.sh start)"   # start both, export SHOAL_TEST_PG/REDIS
#   scripts/services.sh env               # print the export lines again
#   scripts/services.sh status
#   scripts/services.sh stop              # stop both (data is kept)
#   scripts/services.sh restart-pg [fast|immediate]   # immediate = crash-like
#   scripts/services.sh restart-redis [kill]          # kill = SIGKILL, not SHUTDOWN
#   scripts/services.sh start-pg | stop-pg | start-redis | stop-redis
#   scripts/services.sh wipe              # stop and delete all data
#
# Only the export lines go to stdout; progress goes to stderr. Every command
# is idempotent. Settings (environment):
#   SHOAL_SERVICES_DIR  data, logs, pid files   (default /var/tmp/shoal-services)
#   SHOAL_PG_PORT       PostgreSQL port          (default 15432)
#   SHOAL_REDIS_PORT    Redis port               (default 16379)
# Ports are below Linux's ephemeral range (32768-60999): a port in it can be
# held by an outgoing connection's local end, and a server then cannot bind.
#
# PostgreSQL runs with fsync=off (it only matters when the OS crashes; a
# killed server loses nothing committed) and a "shoal" superuser owning a
# database "shoal". Redis keeps an append-only file, so restart-redis keeps
# the data just as a production restart would. Tests isolate themselves
# (a schema per PostgreSQL test, a key namespace per Redis test).
set -eu

DIR=${SHOAL_SERVICES_DIR:-/var/tmp/shoal-services}
PG_PORT=${SHOAL_PG_PORT:-15432}
REDIS_PORT=${SHOAL_REDIS_PORT:-16379}
PG_DATA=$DIR/pg
REDIS_DIR=$DIR/redis
PG_URL="postgres://shoal:shoal@127.0.0.1:$PG_PORT/shoal?sslmode=disable"
REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"

log() { echo "services.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# as_pg runs a command as the postgres user (the server refuses root).
as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

pg_bin() {
	for v in 15 16 17 14; do
		if [ -x "/usr/lib/postgresql/$v/bin/pg_ctl" ]; then
			echo "/usr/lib/postgresql/$v/bin"
			return
		fi
	done
}

# install_missing installs PostgreSQL and Redis with apt without letting the
# packages start their own system-wide servers.
install_missing() {
	need=""
	[ -n "$(pg_bin)" ] || need="$need postgresql-15"
	command -v redis-server >/dev/null 2>&1 || need="$need redis-server"
	command -v runuser >/dev/null 2>&1 || need="$need util-linux"
	[ -n "$need" ] || return 0
	[ "$(id -u)" = 0 ] || die "need root to apt-get install$need"
	log "installing$need"
	mkdir -p /etc/postgresql-common
	grep -qs '^create_main_cluster' /etc/postgresql-common/createcluster.conf ||
		echo 'create_main_cluster = false' >>/etc/postgresql-common/createcluster.conf
	policy_made=""
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		policy_made=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q $need >&2
	[ -z "$policy_made" ] || rm -f /usr/sbin/policy-rc.d
	[ -n "$(pg_bin)" ] || die "PostgreSQL binaries not found after install"
}

pg_running() {
	[ -f "$PG_DATA/PG_VERSION" ] && as_pg "$(pg_bin)/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1
}

pg_init() {
	[ -f "$PG_DATA/PG_VERSION" ] && return 0
	log "initdb $PG_DATA"
	mkdir -p "$PG_DATA"
	[ "$(id -u)" != 0 ] || chown postgres: "$DIR" "$PG_DATA"
	chmod 700 "$PG_DATA"
	as_pg "$(pg_bin)/initdb" -D "$PG_DATA" -U postgres --auth=trust -E UTF8 --locale=C >"$DIR/initdb.log" 2>&1 ||
		die "initdb failed, see $DIR/initdb.log"
}

start_pg() {
	pg_init
	if ! pg_running; then
		log "starting PostgreSQL on 127.0.0.1:$PG_PORT"
		as_pg "$(pg_bin)/pg_ctl" -D "$PG_DATA" -l "$PG_DATA/server.log" -w -t 60 \
			-o "-p $PG_PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories= -c fsync=off -c max_connections=300" \
			start >&2 || die "PostgreSQL did not start, see $PG_DATA/server.log"
	fi
	wait_for "PostgreSQL" pg_ready
	pg_setup
}

pg_ready() { "$(pg_bin)/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"; }

psql_admin() { "$(pg_bin)/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -tA "$@"; }

# pg_setup creates the shoal role and database once.
pg_setup() {
	if [ -z "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = 'shoal'")" ]; then
		psql_admin -c "CREATE ROLE shoal LOGIN SUPERUSER PASSWORD 'shoal'" >&2
	fi
	if [ -z "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = 'shoal'")" ]; then
		psql_admin -c "CREATE DATABASE shoal OWNER shoal" >&2
	fi
}

stop_pg() {
	mode=${1:-fast}
	if pg_running; then
		log "stopping PostgreSQL ($mode)"
		as_pg "$(pg_bin)/pg_ctl" -D "$PG_DATA" -m "$mode" -w -t 60 stop >&2
	fi
}

redis_ready() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; }

start_redis() {
	mkdir -p "$REDIS_DIR"
	if ! redis_ready; then
		log "starting Redis on 127.0.0.1:$REDIS_PORT"
		redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --daemonize yes --save '' \
			--appendonly yes --appendfsync everysec --dir "$REDIS_DIR" \
			--pidfile "$REDIS_DIR/redis.pid" --logfile "$REDIS_DIR/redis.log" >&2
	fi
	wait_for "Redis" redis_ready
}

stop_redis() {
	how=${1:-shutdown}
	redis_ready || return 0
	if [ "$how" = kill ] && [ -f "$REDIS_DIR/redis.pid" ]; then
		log "killing Redis (SIGKILL)"
		kill -9 "$(cat "$REDIS_DIR/redis.pid")" 2>/dev/null || true
	else
		log "stopping Redis"
		redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
	fi
	i=0
	while redis_ready && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	rm -f "$REDIS_DIR/redis.pid"
}

# wait_for polls a readiness check for up to 30 s.
wait_for() {
	what=$1
	shift
	i=0
	until "$@"; do
		i=$((i + 1))
		[ $i -lt 300 ] || die "$what does not accept connections"
		sleep 0.1
	done
}

print_env() {
	echo "export SHOAL_TEST_PG='$PG_URL'"
	echo "export SHOAL_TEST_REDIS='$REDIS_URL'"
}

cmd=${1:-start}
[ $# -eq 0 ] || shift
case $cmd in
start)
	install_missing
	mkdir -p "$DIR"
	chmod 755 "$DIR"
	start_pg
	start_redis
	print_env
	;;
env) print_env ;;
status)
	if pg_running; then log "PostgreSQL: running on $PG_PORT"; else log "PostgreSQL: stopped"; fi
	if redis_ready; then log "Redis: running on $REDIS_PORT"; else log "Redis: stopped"; fi
	;;
stop)
	stop_pg fast
	stop_redis
	;;
start-pg) start_pg ;;
stop-pg) stop_pg "${1:-fast}" ;;
restart-pg)
	stop_pg "${1:-fast}"
	start_pg
	;;
start-redis) start_redis ;;
stop-redis) stop_redis "${1:-shutdown}" ;;
restart-redis)
	stop_redis "${1:-shutdown}"
	start_redis
	;;
wipe)
	stop_pg immediate
	stop_redis
	rm -rf "$DIR"
	;;
*) die "unknown command $cmd (start|stop|env|status|restart-pg|restart-redis|start-pg|stop-pg|start-redis|stop-redis|wipe)" ;;
esac
