#!/usr/bin/env bash
# A throwaway PostgreSQL cluster owned by the build (mk/postgres.mk has the
# interface): `cluster.sh start` creates it on first use and starts it when it
# is not running; `cluster.sh stop` stops it. Its folder is $PG_DIR:
#   data/  the cluster (initdb, trust auth, listening on 127.0.0.1 only)
#   run/   its unix socket
#   port   the TCP port: the last start's, or a free one when that is taken
#   url    the libpq URL of role `leasehold`, database `leasehold`
#   log    the server's log
# As root, the cluster belongs to and runs as $PG_OS_USER (initdb refuses root).
set -euo pipefail

PG_DIR=${PG_DIR:?PG_DIR names the cluster folder}
PG_OS_USER=${PG_OS_USER:-postgres}
DATA=$PG_DIR/data

# The newest installed server's binaries.
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "cluster.sh: no PostgreSQL server under /usr/lib/postgresql (make postgres installs it)" >&2
  exit 1
fi

# Runs a command as the cluster's owner: $PG_OS_USER as root, else ourselves.
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u "$PG_OS_USER" -- "$@"; else "$@"; fi
}

running() {
  [ -f "$DATA/postmaster.pid" ] && as_owner "$bindir/pg_ctl" status -D "$DATA" >/dev/null 2>&1
}

# Whether the port can be bound as PostgreSQL binds it (SO_REUSEADDR: the
# connections of a server killed a moment ago may linger in TIME_WAIT).
port_free() {
  python3 -c 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))' "$1" 2>/dev/null
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  mkdir -p "$PG_DIR"
  if [ "$(id -u)" = 0 ]; then chown "$PG_OS_USER" "$PG_DIR"; fi
  if [ ! -f "$DATA/PG_VERSION" ]; then
    rm -rf "$DATA"
    as_owner mkdir -p "$DATA" "$PG_DIR/run"
    as_owner "$bindir/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$PG_DIR/initdb.log"
    {
      echo "listen_addresses = '127.0.0.1'"
      echo "unix_socket_directories = '$PG_DIR/run'"
      echo "fsync = off"
      echo "max_connections = 200"
    } | as_owner tee -a "$DATA/postgresql.conf" >/dev/null
  fi
  if running; then
    port=$(cat "$PG_DIR/port")
    echo "postgres: already running on 127.0.0.1:$port"
  else
    # The port of the last start, unless something else took it meanwhile.
    port=$(cat "$PG_DIR/port" 2>/dev/null || true)
    if [ -z "$port" ] || ! port_free "$port"; then port=$(free_port); fi
    echo "$port" >"$PG_DIR/port"
    as_owner touch "$PG_DIR/log"
    as_owner "$bindir/pg_ctl" start -D "$DATA" -l "$PG_DIR/log" -o "-p $port" -w -t 60 >/dev/null
    echo "postgres: started on 127.0.0.1:$port (log $PG_DIR/log)"
  fi
  psql_admin() { "$bindir/psql" -X -q -t -A -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d postgres "$@"; }
  if [ -z "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = 'leasehold'")" ]; then
    psql_admin -c "CREATE ROLE leasehold LOGIN"
  fi
  if [ -z "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = 'leasehold'")" ]; then
    psql_admin -c "CREATE DATABASE leasehold OWNER leasehold"
  fi
  echo "postgres://leasehold@127.0.0.1:$port/leasehold" >"$PG_DIR/url"
  "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port" -d leasehold -U leasehold
}

stop() {
  if running; then
    as_owner "$bindir/pg_ctl" stop -D "$DATA" -m fast -w >/dev/null
    echo "postgres: stopped"
  else
    echo "postgres: not running"
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: cluster.sh start|stop" >&2; exit 2 ;;
esac
