#!/usr/bin/env bash
# Installs the Debian packages the test suite needs, when they are missing and we may install
# (root with apt-get). Elsewhere it prints what is missing and carries on: the suites that need a
# package then fail with a message naming it. Idempotent and quiet when everything is there.
set -uo pipefail
need=()
# libs/sandbox: bubblewrap, prlimit/setpriv (rlimits inside the sandbox, dropping root) and the
# distribution's python3, which runs from /usr alone (a pyenv build under /root is unreadable once
# we drop to nobody).
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v prlimit >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
[ -x /usr/bin/python3 ] || need+=(python3)
# apps/engine-torch + libs/engine-torch: the torch worker's CPU tests run on Debian's python3-torch.
/usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || need+=(python3-torch libopenblas0-pthread)
/usr/bin/python3 -c 'import pytest' >/dev/null 2>&1 || need+=(python3-pytest)
# libs/storage: a real S3 server for its tests — Ceph's RADOS gateway on loopback (tools/ceph/start-rgw.sh).
for pair in ceph-mon:ceph-mon ceph-osd:ceph-osd radosgw:radosgw ceph:ceph-common; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair#*:}")
done
# apps/api: the playground's browser test drives Debian's chromium through playwright-core.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: installing ${need[*]}"
  (apt-get update -qq || true) >/dev/null 2>&1
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1 ||
    echo "system-deps: apt-get install ${need[*]} failed" >&2
else
  echo "system-deps: missing ${need[*]} (install them with your package manager)" >&2
fi
exit 0
