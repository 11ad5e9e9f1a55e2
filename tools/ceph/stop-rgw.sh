#!/usr/bin/env bash
# Stops the cluster tools/ceph/start-rgw.sh started (gateway, OSD, monitor, by their pid files) and
# removes its data folder. Quiet and idempotent: nothing running is not an error.
set -uo pipefail
dir=${TROUPE_CEPH_DIR:-/tmp/troupe-ceph}
for name in client.rgw.a osd.0 mon.a; do
  pidfile="$dir/run/$name.pid"
  [ -f "$pidfile" ] || continue
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || continue
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
done
[ "${TROUPE_CEPH_KEEP:-0}" = 1 ] || rm -rf "$dir"
