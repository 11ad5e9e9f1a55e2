#!/usr/bin/env bash
# Stops the S3 test server tools/ceph/start-rgw.sh started (gateway, OSD, monitor, by their pid
# files) and removes its data folder. Quiet and idempotent: nothing running is not an error.
#
#   stop-rgw.sh               stop it now, whoever still uses it (what a person runs by hand)
#   stop-rgw.sh --user PID    PID is done with it: stop it only if no other live user is left
#
# Settings: TROUPE_CEPH_DIR as for start-rgw.sh; TROUPE_CEPH_KEEP=1 keeps the data folder.
set -uo pipefail
dir=${TROUPE_CEPH_DIR:-/tmp/troupe-ceph}
user=""
case "${1:-}" in
--user) user=${2:?stop-rgw: --user needs a process id} ;;
--restart | "") ;; # --restart: start-rgw.sh clearing a dead cluster; its users stay recorded
*) echo "stop-rgw: unknown argument '$1' (use --user PID, or nothing to stop it now)" >&2; exit 2 ;;
esac

# start-rgw.sh calls us while it holds the lock already (TROUPE_CEPH_LOCKED=1).
if [ "${TROUPE_CEPH_LOCKED:-0}" != 1 ] && [ -d "$(dirname "$dir")" ]; then
  exec 9>"$dir.lock"
  flock -w "${TROUPE_CEPH_LOCK_WAIT:-300}" 9 || { echo "stop-rgw: $dir.lock is held by a start that does not end" >&2; exit 1; }
fi

if [ -n "$user" ]; then
  rm -f "$dir.users/$user"
  # Users that died without saying so (a killed test run) do not keep the server alive.
  for f in "$dir.users"/*; do
    [ -e "$f" ] || continue
    pid=${f##*/}
    if kill -0 "$pid" 2>/dev/null; then exit 0; fi # someone still uses it: leave it running
    rm -f "$f"
  done
fi

for name in client.rgw.a osd.0 mon.a; do
  pidfile="$dir/run/$name.pid"
  [ -f "$pidfile" ] || continue
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || continue
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
done
[ -n "${1:-}" ] || rm -rf "$dir.users"
[ "${TROUPE_CEPH_KEEP:-0}" = 1 ] || rm -rf "$dir"
