#!/usr/bin/env bash
# make demo: a server store on loopback, and holders in every language
# contending for the keys of one lock, each writing its fence to a fenced
# resource (one file per key) that refuses a fence not larger than the last.
# make demo-etcd (DEMO_STORE=etcd): the same holders on a 3-member etcd
# cluster on loopback, whose leader is killed (kill -9) halfway through.
# make demo-postgres (DEMO_STORE=postgres): the same holders on a PostgreSQL
# of the demo's own (tools/postgres/cluster.sh), killed (kill -9 of the
# postmaster and every backend) halfway through and started again.
# Each run draws its timeline (demo/timeline.py) to
# $CARGO_TARGET_DIR/demo-<store>-timeline.svg and fails if two holds of a
# key overlap there.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${CARGO_TARGET_DIR:=$PWD/target}"
export CARGO_TARGET_DIR
langs=${DEMO_HOLDERS:-}
seconds=${DEMO_SECONDS:-4}
store=${DEMO_STORE:-server}
# The Rust builds the demo runs: release, or debug for `make demo-test`,
# which gives (DEMO_BUILD, cargo build's selection) the build its other
# steps made already.
profile=${DEMO_PROFILE:-release}
if [ "$profile" = release ]; then profile_flag=--release; else profile_flag=; fi

# shellcheck disable=SC2086 # DEMO_BUILD is a list of arguments
cargo build $profile_flag -q ${DEMO_BUILD:--p leasehold-server -p leasehold-demo}
work=$(mktemp -d)
server_pid=
etcd_pids=()
pg_cluster() { PG_DIR="$work/pg" bash tools/postgres/cluster.sh "$@"; }
cleanup() {
  local status=$?
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  for pid in "${etcd_pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  [ "$store" = postgres ] && { pg_cluster stop >/dev/null 2>&1 || true; }
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

if [ "$store" = etcd ]; then
  etcd_bin=${LEASEHOLD_ETCD:?"LEASEHOLD_ETCD: the etcd binary (make etcd builds it)"}
  ports=($(python3 -c 'import socket
socks = [socket.socket() for _ in range(6)]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))'))
  cluster=""
  for i in 0 1 2; do cluster+="${cluster:+,}m$i=http://127.0.0.1:${ports[$((3 + i))]}"; done
  for i in 0 1 2; do
    client=http://127.0.0.1:${ports[$i]} peer=http://127.0.0.1:${ports[$((3 + i))]}
    "$etcd_bin" --name "m$i" --data-dir "$work/etcd-m$i" \
      --listen-client-urls "$client" --advertise-client-urls "$client" \
      --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
      --initial-cluster "$cluster" --initial-cluster-state new \
      --heartbeat-interval 50 --election-timeout 500 --logger zap --log-level error \
      >"$work/etcd-m$i.log" 2>&1 &
    etcd_pids+=($!)
    disown $!
  done
  # The member that leads, as etcd's JSON gateway tells (member ids are strings there).
  leader() {
    python3 - "${ports[@]:0:3}" <<'PY'
import json, sys, urllib.request
for i, port in enumerate(sys.argv[1:]):
    try:
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v3/maintenance/status", b"{}")
        s = json.load(urllib.request.urlopen(req, timeout=1))
    except OSError:
        continue
    if s.get("leader") and s["leader"] == s["header"]["member_id"]:
        print(i)
        break
PY
  }
  for _ in $(seq 200); do [ -n "$(leader)" ] && break; sleep 0.05; done
  [ -n "$(leader)" ] || { echo "the etcd cluster did not start:"; cat "$work"/etcd-m*.log; exit 1; }
  export LEASEHOLD_STORE="etcd://127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}/demo"
  echo "etcd store on $LEASEHOLD_STORE (3 members); holders: rust ${langs}"
elif [ "$store" = postgres ]; then
  # The cluster's owner (postgres, under root) must reach its folder.
  chmod 755 "$work"
  pg_cluster start >/dev/null
  pg_port=$(cat "$work/pg/port")
  export LEASEHOLD_STORE="$(cat "$work/pg/url")?schema=demo"
  echo "PostgreSQL store on $LEASEHOLD_STORE; holders: rust ${langs}"
else
  "$CARGO_TARGET_DIR/$profile/leasehold" serve --listen 127.0.0.1:0 --data-dir "$work/data" \
    >"$work/server.out" 2>"$work/server.log" &
  server_pid=$!
  for _ in $(seq 100); do
    grep -q '^listening on ' "$work/server.out" 2>/dev/null && break
    sleep 0.05
  done
  addr=$(sed -n 's/^listening on //p' "$work/server.out")
  [ -n "$addr" ] || { echo "the server did not start:"; cat "$work/server.log"; exit 1; }
  export LEASEHOLD_STORE="leasehold://$addr"
  echo "server store on $LEASEHOLD_STORE; holders: rust ${langs}"
fi
export DEMO_DIR="$work/resource"
mkdir -p "$DEMO_DIR"

# Build every language's holder first (a run of 0 seconds), so that all start together.
for lang in $langs; do
  DEMO_SECONDS=0 DEMO_NAME=warmup make -s "demo-holder-$lang" >/dev/null
done
rm -f "$DEMO_DIR"/*

pids=()
for n in 1 2; do
  DEMO_SECONDS=$seconds DEMO_NAME=$n "$CARGO_TARGET_DIR/$profile/leasehold-demo" | tee "$work/holds-rust-$n" &
  pids+=($!)
done
for lang in $langs; do
  DEMO_SECONDS=$seconds DEMO_NAME=1 make -s "demo-holder-$lang" | tee "$work/holds-$lang" &
  pids+=($!)
done
if [ "$store" = etcd ]; then
  sleep "$(python3 -c "print($seconds / 2)")"
  killed=$(leader)
  kill -9 "${etcd_pids[$killed]}"
  echo "$(date +%T.%3N) killed the etcd leader m$killed (kill -9) while the holders held and waited"
  echo "fault at=$(date +%s%3N) the etcd leader m$killed killed (kill -9)" >>"$work/faults"
elif [ "$store" = postgres ]; then
  sleep "$(python3 -c "print($seconds / 2)")"
  postmaster=$(head -n 1 "$work/pg/data/postmaster.pid")
  backends=$(pgrep -P "$postmaster" || true)
  kill -9 "$postmaster" $backends
  echo "$(date +%T.%3N) killed PostgreSQL (kill -9 of the postmaster and its backends) while the holders held and waited"
  echo "fault at=$(date +%s%3N) PostgreSQL killed (kill -9)" >>"$work/faults"
  # Started again once every killed process is gone (they hold its shared memory).
  for pid in "$postmaster" $backends; do
    while grep -qv ') Z ' "/proc/$pid/stat" 2>/dev/null; do sleep 0.05; done
  done
  # The dead postmaster's lock files name its pid, which lives on as a
  # zombie until reaped: a new postmaster would wait for it, pg_ctl would
  # take the old pid file for the new server's. Both are known dead here.
  rm -f "$work/pg/data/postmaster.pid" "$work"/pg/run/.s.PGSQL.*.lock
  for try in $(seq 50); do
    pg_cluster start >/dev/null 2>&1 && break
    [ "$try" = 50 ] && { echo "PostgreSQL did not start again:"; tail -n 20 "$work/pg/log"; exit 1; }
    sleep 0.1
  done
  [ "$(cat "$work/pg/port")" = "$pg_port" ] || { echo "PostgreSQL came back on another port"; exit 1; }
  echo "$(date +%T.%3N) PostgreSQL started again on its data"
  echo "fault at=$(date +%s%3N) PostgreSQL started again" >>"$work/faults"
fi
failed=0
for pid in "${pids[@]}"; do
  wait "$pid" || failed=1
done

# One file per holder (appends of several tees to one file could split a
# line), joined once every holder is done.
cat "$work"/holds-* >"$work/holds"
[ -f "$work/faults" ] && cat "$work/faults" >>"$work/holds"
echo
timeline="$CARGO_TARGET_DIR/demo-$store-timeline.svg"
"${LEASEHOLD_PLOT_PYTHON:-python3}" demo/timeline.py "$work/holds" "$timeline" \
  --title "make demo on the $store store: $seconds s, holders in rust ${langs}" || failed=1
echo "holds per holder:"
sed -n 's/^\[\([^]]*\)\] holds .*/\1/p' "$work/holds" | sort | uniq -c
echo "last fence written to each key's resource:"
for f in "$DEMO_DIR"/*; do echo "  $(basename "$f") $(cat "$f")"; done
if grep -q REJECTED "$work/holds" || [ "$failed" -ne 0 ]; then
  echo "FAILED: a holder failed or a stale fence reached the resource"
  exit 1
fi
echo "every fence the resource saw was larger than the one before: no two holders overlapped"
if [ "$store" = etcd ]; then
  echo "no lease was lost: every holder's every hold ended without a loss, through the leader's death"
elif [ "$store" = postgres ]; then
  echo "no lease was lost: every holder's every hold ended without a loss, through the database's crash"
fi
