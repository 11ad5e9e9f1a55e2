#!/usr/bin/env bash
# Installs the Debian packages the test suite needs, when they are missing and we may install
# (root with apt-get). Elsewhere it prints what is missing and carries on: the suites that need a
# package then fail with a message naming it.
set -uo pipefail
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
# libs/sandbox: prlimit/setpriv (rlimits inside the sandbox, dropping root) and the distribution's
# python3, which runs from /usr alone (a pyenv build under /root is unreadable once we drop to nobody).
command -v prlimit >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
[ -x /usr/bin/python3 ] || need+=(python3)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: installing ${need[*]}"
  (apt-get update -qq || true) >/dev/null 2>&1
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
else
  echo "system-deps: missing ${need[*]} (install them with your package manager)" >&2
fi
