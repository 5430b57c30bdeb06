#!/usr/bin/env bash
# A real Ceph RADOS gateway (S3) on loopback for titan's tests: one ceph-mon, one OSD with the
# in-memory object store (memstore) and one radosgw, no systemd, no mgr, no cephx.
#
# Usage:
#   eval "$(bash scripts/rgw.sh start DIR)"   # start; prints export lines on stdout
#   bash scripts/rgw.sh restart-rgw DIR        # kill -9 radosgw, start it again on the same port
#   bash scripts/rgw.sh stop DIR               # stop all three daemons; idempotent
#
# Contract:
# - start: every daemon listens on 127.0.0.1 only. The monitor and gateway ports are chosen free
#   at start (20000-32767, below Linux's ephemeral range; a bind race is retried on new ports);
#   the OSD picks its own free ports in Ceph's 6800-7300. State, logs and pid files live under
#   DIR (created if missing; DIR's own files from an earlier stopped run are replaced; a running
#   instance in DIR is an error). An S3 user with access key TITANAK and secret TITANSECRET is
#   created, and start returns only once a signed S3 request (ListBuckets) succeeds, within
#   TITAN_RGW_TIMEOUT seconds (default 90); otherwise it stops what it started, prints the tail
#   of the failing daemon's log on stderr and exits 1. stdout carries only these lines:
#     export AWS_ENDPOINT_URL=http://127.0.0.1:PORT
#     export AWS_ACCESS_KEY_ID=TITANAK
#     export AWS_SECRET_ACCESS_KEY=TITANSECRET
#     export AWS_REGION=us-east-1
#     export TITAN_RGW_DIR=DIR
#   (also kept in DIR/rgw.env); progress and diagnostics go to stderr. Start takes about
#   1.2 s on 2 cores (up to 6 s when the OSD's boot waits a monitor tick), stop about 1 s.
# - Objects live in the OSD's memory: they survive restart-rgw, not stop. Idle RSS is about
#   35 MB (mon) + 48 MB (OSD) + 52 MB (radosgw); the OSD grows by about twice the bytes stored.
#   memstore's capacity is TITAN_RGW_MEMSTORE_BYTES (default 2 GiB): past it the OSD marks
#   itself full and every write then hangs (radosgw returns no error), so a test must not
#   keep more than that; deleted and overwritten objects' data is freed by radosgw's garbage
#   collection within about a minute.
# - Daemons never outlive their owner: pids are kept in DIR/*.pid, and if TITAN_RGW_WATCH_PID is
#   set at start, a watcher stops the daemons as soon as that process exits (a test killed with
#   SIGKILL leaves nothing running). stop sends SIGTERM, waits up to 10 s, then SIGKILLs, and
#   also kills any leftover process started with DIR's ceph.conf.
# - restart-rgw returns once the gateway answers S3 again on the same port (bounded as start).
set -euo pipefail

usage() {
  echo "usage: bash scripts/rgw.sh start|stop|restart-rgw DIR" >&2
  exit 2
}
[ $# -eq 2 ] || { [ $# -eq 3 ] && [ "$1" = _watch ]; } || usage
CMD=$1
if [ "$CMD" != start ] && [ ! -d "$2" ]; then
  [ "$CMD" = stop ] && exit 0 # nothing was ever started there
  echo "rgw.sh: no such directory: $2" >&2
  exit 1
fi
mkdir -p "$2"
D=$(cd "$2" && pwd)
CONF=$D/ceph.conf
SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
TIMEOUT=${TITAN_RGW_TIMEOUT:-90}
AK=TITANAK
SK=TITANSECRET
REGION=us-east-1
EMPTY_SHA256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
export CEPH_CONF=$CONF

log() { echo "rgw.sh: $*" >&2; }

# alive PID: the process exists, is not a zombie, and was started with this DIR's ceph.conf
# (a recycled pid is never mistaken for ours).
alive() {
  local pid=$1 state
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
  state=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ "$state" != Z ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$CONF"
}

pid_of() { cat "$D/$1.pid" 2>/dev/null || true; }

# stop_daemon NAME: SIGTERM (or $2), wait up to 10 s, then SIGKILL and wait up to 5 s more.
stop_daemon() {
  local name=$1 sig=${2:-TERM} pid i
  pid=$(pid_of "$name")
  if alive "$pid"; then
    kill "-$sig" "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then
      log "$name (pid $pid) ignored SIG$sig for 10 s; SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do alive "$pid" || break; sleep 0.1; done
    fi
    if alive "$pid"; then
      log "$name (pid $pid) still running after SIGKILL"
      return 1
    fi
  fi
  rm -f "$D/$name.pid"
}

# Every process whose command line names this DIR's ceph.conf (daemons and stray CLI tools).
leftovers() {
  local f pid
  for f in /proc/[0-9]*/cmdline; do
    pid=${f#/proc/}
    pid=${pid%/cmdline}
    [ "$pid" != $$ ] || continue
    alive "$pid" && echo "$pid"
  done
  return 0
}

stop_all() {
  local rc=0 pid
  local watcher
  watcher=$(cat "$D/watch.pid" 2>/dev/null || true)
  if [ -n "$watcher" ] && [ "$watcher" != "${TITAN_RGW_WATCHER:-}" ] &&
    tr '\0' ' ' <"/proc/$watcher/cmdline" 2>/dev/null | grep -qF -- "_watch $D"; then
    # The watcher leads its own process group (setsid), its `tail` included.
    if [ "$(ps -o pgid= -p "$watcher" | tr -d ' ')" = "$watcher" ]; then
      kill -- "-$watcher" 2>/dev/null || true
    else
      kill "$watcher" 2>/dev/null || true
    fi
  fi
  rm -f "$D/watch.pid"
  stop_daemon rgw || rc=1
  stop_daemon osd || rc=1
  stop_daemon mon || rc=1
  for pid in $(leftovers); do
    log "killing leftover pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
    kill -KILL "$pid" 2>/dev/null || true
  done
  return $rc
}

tail_log() {
  local f
  for f in "$@"; do
    [ -s "$f" ] || continue
    echo "----- last lines of $f -----" >&2
    tail -n 25 "$f" >&2
  done
}

# Free TCP ports on 127.0.0.1, distinct, from 20000-32767 (not the kernel's ephemeral range, so
# outgoing connections and port-0 listeners of other tests never take them meanwhile).
free_ports() {
  "$PY" - "$1" <<'EOF'
import random, socket, sys
n, ports = int(sys.argv[1]), []
while len(ports) < n:
    p = random.randrange(20000, 32768)
    if p in ports:
        continue
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))  # no SO_REUSEADDR: a port in TIME_WAIT counts as taken
    except OSError:
        continue
    finally:
        s.close()
    ports.append(p)
print(*ports)
EOF
}

# s3_ok: a signed ListBuckets answers 200.
s3_ok() {
  curl -sf -o /dev/null --max-time 5 --aws-sigv4 "aws:amz:$REGION:s3" --user "$AK:$SK" \
    -H "x-amz-content-sha256: $EMPTY_SHA256" "http://127.0.0.1:$1/"
}

# http_up PORT: the gateway answers HTTP at all (anonymous ListBuckets).
http_up() { curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$1/"; }

# wait_for WHAT DEADLINE CHECK... : run CHECK until it succeeds; fail when a daemon dies or at
# DEADLINE (epoch seconds).
wait_for() {
  local what=$1 deadline=$2 name
  shift 2
  until "$@"; do
    for name in mon osd rgw; do
      if [ -f "$D/$name.pid" ] && ! alive "$(pid_of "$name")"; then
        log "$name exited while waiting for $what"
        FAILED=$name
        return 1
      fi
    done
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "timed out after ${TIMEOUT} s waiting for $what"
      return 1
    fi
    sleep 0.2
  done
}

start_rgw_daemon() {
  radosgw -f -c "$CONF" -n client.rgw.t >"$D/log/rgw.out" 2>&1 </dev/null &
  echo $! >"$D/rgw.pid"
}

daemon_logs() {
  case ${FAILED:-} in
    mon) tail_log "$D/log/mon.out" "$D/log/mon.a.log" ;;
    osd) tail_log "$D/log/osd.out" "$D/log/osd.0.log" ;;
    rgw) tail_log "$D/log/rgw.out" "$D/log/client.rgw.t.log" ;;
    *) tail_log "$D/log/mon.a.log" "$D/log/osd.0.log" "$D/log/rgw.out" "$D/log/client.rgw.t.log" ;;
  esac
}

# One attempt on fresh ports. Exit status 0: up; 3: a port was taken meanwhile (retry); 1: failed.
start_once() {
  local deadline=$1 mon_port rgw_port fsid uuid id
  read -r mon_port rgw_port < <(free_ports 2)
  rm -rf "$D/mon" "$D/osd" "$D/run" "$D/log" "$CONF" "$D/keyring" "$D/monmap" "$D/rgw.env" \
    "$D/rgw.port"
  mkdir -p "$D/mon/ceph-a" "$D/osd/ceph-0" "$D/run" "$D/log"
  fsid=$(cat /proc/sys/kernel/random/uuid)
  cat >"$CONF" <<EOF
# written by scripts/rgw.sh for a throwaway test cluster
[global]
fsid = $fsid
mon_host = [v2:127.0.0.1:$mon_port]
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
ms_bind_msgr1 = false
ms_bind_ipv6 = false
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
ms_mon_client_mode = crc secure
ms_client_mode = crc secure
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
mon_allow_pool_size_one = true
mon_warn_on_pool_no_redundancy = false
# the monitor batches map updates for 1 s by default; radosgw creates its pools one by one
paxos_propose_interval = 0.05
paxos_min_wait = 0.01
# the monitor's store is tiny: never shut it down because the disk is nearly full
mon_data_avail_crit = 0
run_dir = $D/run
pid_file =
admin_socket = $D/run/\$name.asok
log_file = $D/log/\$name.log
keyring = $D/keyring
mon_data = $D/mon/\$cluster-\$id
osd_data = $D/osd/\$cluster-\$id
osd_objectstore = memstore
memstore_device_bytes = ${TITAN_RGW_MEMSTORE_BYTES:-2147483648}
[client.rgw.t]
rgw_frontends = beast endpoint=127.0.0.1:$rgw_port
# Deleted and overwritten objects' data is freed by garbage collection, by default 2 h later
# and hourly; memstore is RAM and a full OSD blocks every write, so collect within a minute.
rgw_gc_obj_min_wait = 30
rgw_gc_processor_period = 15
EOF
  ceph-authtool --create-keyring "$D/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  monmaptool --create --addv a "[v2:127.0.0.1:$mon_port]" --fsid "$fsid" "$D/monmap" >/dev/null
  ceph-mon -c "$CONF" --mkfs -i a --monmap "$D/monmap" >"$D/log/mkfs.out" 2>&1 ||
    { tail_log "$D/log/mkfs.out"; return 1; }
  log "ceph-mon on 127.0.0.1:$mon_port"
  ceph-mon -f -c "$CONF" -i a >"$D/log/mon.out" 2>&1 </dev/null &
  echo $! >"$D/mon.pid"

  # Bound and leader, or the port was taken meanwhile (the monitor would retry for 15 s).
  if ! wait_for "ceph-mon to lead" "$deadline" grep -qE 'mon\.a@0\(leader\)|unable to bind' \
    "$D/log/mon.a.log"; then
    daemon_logs
    return 1
  fi
  if grep -q 'unable to bind' "$D/log/mon.a.log"; then
    log "port $mon_port was taken meanwhile; retrying on other ports"
    return 3
  fi
  uuid=$(cat /proc/sys/kernel/random/uuid)
  if ! id=$(timeout 30 ceph -c "$CONF" --connect-timeout 25 osd new "$uuid" 2>"$D/log/osd-new.out"); then
    FAILED=mon
    tail_log "$D/log/osd-new.out"
    daemon_logs
    return 1
  fi
  [ "$id" = 0 ] || { log "unexpected OSD id '$id'"; return 1; }
  ceph-osd -c "$CONF" -i 0 --mkfs --osd-uuid "$uuid" >"$D/log/osd-mkfs.out" 2>&1 ||
    { tail_log "$D/log/osd-mkfs.out"; return 1; }
  ceph-osd -f -c "$CONF" -i 0 >"$D/log/osd.out" 2>&1 </dev/null &
  echo $! >"$D/osd.pid"
  log "ceph-osd started"

  start_rgw_daemon
  if ! wait_for "radosgw on 127.0.0.1:$rgw_port" "$deadline" http_up "$rgw_port"; then
    if [ "${FAILED:-}" = rgw ] && grep -qiE 'Address already in use|failed to bind' \
      "$D/log/client.rgw.t.log" "$D/log/rgw.out" 2>/dev/null; then
      log "port $rgw_port was taken meanwhile; retrying on other ports"
      return 3
    fi
    daemon_logs
    return 1
  fi
  log "radosgw answers on 127.0.0.1:$rgw_port; creating user $AK"
  if ! timeout 30 radosgw-admin -c "$CONF" user create --uid=titan --display-name=titan \
    --access-key="$AK" --secret="$SK" >"$D/log/user-create.out" 2>&1; then
    tail_log "$D/log/user-create.out"
    return 1
  fi
  if ! wait_for "a signed S3 request to succeed" "$deadline" s3_ok "$rgw_port"; then
    daemon_logs
    return 1
  fi
  echo "$rgw_port" >"$D/rgw.port"
  cat >"$D/rgw.env" <<EOF
export AWS_ENDPOINT_URL=http://127.0.0.1:$rgw_port
export AWS_ACCESS_KEY_ID=$AK
export AWS_SECRET_ACCESS_KEY=$SK
export AWS_REGION=$REGION
export TITAN_RGW_DIR=$D
EOF
}

cmd_start() {
  local t0 attempt rc deadline
  t0=$(date +%s.%N)
  for b in ceph-mon ceph-osd radosgw radosgw-admin ceph ceph-authtool monmaptool curl; do
    command -v "$b" >/dev/null ||
      { log "$b not found; run scripts/bootstrap.sh (Debian ceph-mon ceph-osd radosgw ceph-common)"; exit 1; }
  done
  PY=$(command -v /usr/bin/python3 || command -v python3) || { log "python3 not found"; exit 1; }
  # The admin sockets are unix sockets: their path must fit sun_path (108 bytes).
  if [ ${#D} -gt 80 ]; then
    log "DIR path too long for ceph's admin sockets (${#D} > 80 characters): $D"
    exit 1
  fi
  local name
  for name in mon osd rgw; do
    if alive "$(pid_of "$name")"; then
      log "an instance is already running in $D ($name pid $(pid_of "$name")); stop it first"
      exit 1
    fi
  done
  deadline=$(($(date +%s) + TIMEOUT))
  for attempt in 1 2 3; do
    FAILED=
    set +e
    (
      set -e
      start_once "$deadline"
    )
    rc=$?
    set -e
    [ $rc -eq 0 ] && break
    stop_all || true
    [ $rc -eq 3 ] && [ $attempt -lt 3 ] && continue
    log "start failed (state and logs are in $D)"
    exit 1
  done
  if [ -n "${TITAN_RGW_WATCH_PID:-}" ]; then
    # The watcher's output must not hold the caller's stdout pipe open ($(...) would never end).
    setsid bash "$SELF" _watch "$D" "$TITAN_RGW_WATCH_PID" >/dev/null 2>&1 </dev/null &
    echo $! >"$D/watch.pid"
  fi
  log "up in $(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)") s"
  cat "$D/rgw.env"
}

cmd_restart_rgw() {
  local port deadline
  port=$(cat "$D/rgw.port" 2>/dev/null) || { log "no instance started in $D"; exit 1; }
  if ! alive "$(pid_of osd)" || ! alive "$(pid_of mon)"; then
    log "mon/osd not running in $D"
    exit 1
  fi
  stop_daemon rgw KILL
  deadline=$(($(date +%s) + TIMEOUT))
  FAILED=
  start_rgw_daemon
  if ! wait_for "radosgw to answer again on 127.0.0.1:$port" "$deadline" s3_ok "$port"; then
    FAILED=rgw
    daemon_logs
    exit 1
  fi
  log "radosgw restarted on 127.0.0.1:$port"
}

cmd_watch() {
  echo $$ >"$D/watch.pid" # $! in start is this process unless setsid had to fork
  # Blocks (tail polls once a second) until the owner exits, then stops the cluster.
  tail --pid="$1" -f /dev/null
  TITAN_RGW_WATCHER=$$ bash "$SELF" stop "$D" >/dev/null 2>&1 || true
}

case $CMD in
  start) cmd_start ;;
  stop) stop_all ;;
  restart-rgw) cmd_restart_rgw ;;
  _watch) cmd_watch "$3" ;;
  *) usage ;;
esac
