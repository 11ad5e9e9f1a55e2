#!/usr/bin/env bash
# Starts a single-node Ceph cluster on loopback — one monitor, one OSD on memstore (RAM), one RADOS
# gateway — so the storage tests talk to a real S3 server, not a mock. There is one such server per
# machine, shared by every suite and every checkout: starting and stopping happen under a lock
# (flock on "$TROUPE_CEPH_DIR.lock"), a gateway that is already up and healthy is reused, and with
# `--user PID` the caller is recorded as a user (a file "$TROUPE_CEPH_DIR.users/PID"), so that
# `stop-rgw.sh --user PID` stops the cluster only once its last live user is gone.
#
# Prints one line of JSON: {"endpoint","region","accessKeyId","secretAccessKey","dataDir"}.
# Needs: ceph-mon ceph-osd radosgw ceph-common (tools/system-deps.sh installs them), flock.
#
# Settings (environment):
#   TROUPE_CEPH_DIR   data folder, default /tmp/troupe-ceph (wiped on a cold start)
#   TROUPE_RGW_PORT   gateway port on 127.0.0.1, default 7481
#   TROUPE_MON_PORT   monitor port (msgr v2) on 127.0.0.1, default 3310
#   TROUPE_CEPH_MEM   memstore size in bytes, default 1 GiB (RAM is only used as objects are written)
#   TROUPE_CEPH_LOCK_WAIT  seconds to wait for another start or stop holding the lock, default 300
set -euo pipefail
dir=${TROUPE_CEPH_DIR:-/tmp/troupe-ceph}
rgw_port=${TROUPE_RGW_PORT:-7481}
mon_port=${TROUPE_MON_PORT:-3310}
mem_bytes=${TROUPE_CEPH_MEM:-1073741824}
access_key=TROUPETESTACCESSKEY0
secret_key=troupe-test-secret-key-0000000000000000
endpoint="http://127.0.0.1:${rgw_port}"
user=""
if [ "${1:-}" = --user ]; then user=${2:?start-rgw: --user needs a process id}; fi
json="{\"endpoint\":\"${endpoint}\",\"region\":\"us-east-1\",\"accessKeyId\":\"${access_key}\",\"secretAccessKey\":\"${secret_key}\",\"dataDir\":\"${dir}\"}"

for tool in ceph-mon ceph-osd radosgw radosgw-admin ceph ceph-authtool monmaptool; do
  command -v "$tool" >/dev/null 2>&1 || { echo "start-rgw: $tool not found (run tools/system-deps.sh)" >&2; exit 2; }
done

command -v flock >/dev/null 2>&1 || { echo "start-rgw: flock not found (util-linux)" >&2; exit 2; }

# One start or stop at a time on this machine, whichever checkout it comes from: a second caller
# waits here while the first builds the cluster, then finds it healthy and reuses it.
mkdir -p "$(dirname "$dir")" "$dir.users"
exec 9>"$dir.lock"
flock -w "${TROUPE_CEPH_LOCK_WAIT:-300}" 9 || {
  echo "start-rgw: another start or stop of the S3 test server held $dir.lock for over ${TROUPE_CEPH_LOCK_WAIT:-300} s" >&2
  exit 1
}
register() { if [ -n "$user" ]; then : >"$dir.users/$user"; fi; }

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
# "Healthy" = the gateway answers an anonymous ListBuckets with HTTP 200.
healthy() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$endpoint/" 2>/dev/null)" = 200 ]; }

if alive "$dir/run/mon.a.pid" && alive "$dir/run/client.rgw.a.pid" && alive "$dir/run/osd.0.pid" && healthy; then
  register
  echo "$json"; exit 0
fi

# Cold start: stop leftovers of an earlier cluster in this folder (we hold the lock already), then
# check that nothing else holds our ports, then build a fresh one.
TROUPE_CEPH_LOCKED=1 "$(dirname "$0")/stop-rgw.sh" --restart >/dev/null 2>&1 || true
rm -rf "$dir"
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
holder() { # "pid 123 (name)" when ss can tell, else nothing
  command -v ss >/dev/null 2>&1 || return 0
  ss -ltnpH "sport = :$1" 2>/dev/null | sed -n 's/.*users:(("\([^"]*\)",pid=\([0-9]*\).*/ (pid \2, \1)/p' | head -1
}
for pair in "TROUPE_RGW_PORT:$rgw_port" "TROUPE_MON_PORT:$mon_port"; do
  port=${pair#*:}
  if listening "$port"; then
    echo "start-rgw: port $port on 127.0.0.1 is held by another process$(holder "$port") that is not this S3 test server (data folder $dir); stop it or set ${pair%%:*} to a free port" >&2
    exit 1
  fi
done
mkdir -p "$dir"/{mon,osd,run,log}
fsid=$(cat /proc/sys/kernel/random/uuid)
conf="$dir/ceph.conf"
cat >"$conf" <<CONF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:${mon_port}]
public network = 127.0.0.0/8
ms bind ipv6 = false
ms bind msgr1 = false
# cephx stays on: "auth none" is refused by this release's daemons.
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
keyring = $dir/keyring
run dir = $dir/run
pid file = $dir/run/\$name.pid
admin socket = $dir/run/\$name.asok
log file = $dir/log/\$name.log
# One OSD: pools of size 1, few placement groups, no health nagging about it.
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
mon max pg per osd = 1000
[mon.a]
mon data = $dir/mon
[osd.0]
osd objectstore = memstore
memstore device bytes = $mem_bytes
osd data = $dir/osd
osd journal size = 0
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:${rgw_port}
rgw thread pool size = 64
rgw dns name = 127.0.0.1
CONF

# Keys: monitor, admin, then the monitor's file system.
ceph-authtool --create-keyring "$dir/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
ceph-authtool "$dir/keyring" --gen-key -n client.admin \
  --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' --cap mds 'allow *' >/dev/null
monmaptool --create --addv a "[v2:127.0.0.1:${mon_port}]" --fsid "$fsid" "$dir/monmap" >/dev/null
ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/keyring" >/dev/null 2>&1
# The daemons must not inherit the lock (fd 9): they outlive this script.
ceph-mon -c "$conf" -i a 9>&-

c() { timeout 30 ceph -c "$conf" "$@"; }
# OSD 0 on memstore.
osd_id=$(c osd create 2>/dev/null)
[ "$osd_id" = 0 ] || { echo "start-rgw: expected osd id 0, got '$osd_id'" >&2; exit 1; }
ceph-osd -c "$conf" -i 0 --mkfs --mkkey --no-mon-config --keyring "$dir/osd/keyring" >/dev/null 2>&1
c auth add osd.0 osd 'allow *' mon 'allow profile osd' -i "$dir/osd/keyring" >/dev/null 2>&1
c osd crush add osd.0 1.0 root=default host=localhost >/dev/null 2>&1
ceph-osd -c "$conf" -i 0 --keyring "$dir/osd/keyring" >/dev/null 2>&1 9>&-

# Gateway.
c auth get-or-create client.rgw.a mon 'allow rw' osd 'allow rwx' >"$dir/rgw.keyring" 2>/dev/null
cat "$dir/rgw.keyring" >>"$dir/keyring"
radosgw -c "$conf" -n client.rgw.a >/dev/null 2>&1 9>&-

for _ in $(seq 1 120); do healthy && break; sleep 0.25; done
healthy || { echo "start-rgw: gateway did not answer on $endpoint; logs in $dir/log" >&2; exit 1; }
timeout 60 radosgw-admin -c "$conf" user create --uid=troupe --display-name=troupe \
  --access-key="$access_key" --secret-key="$secret_key" >/dev/null 2>&1 \
  || { echo "start-rgw: could not create the S3 user; logs in $dir/log" >&2; exit 1; }
register
echo "$json"
