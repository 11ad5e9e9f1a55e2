#!/usr/bin/env bash
# Installs the Debian packages the test suite needs, when they are missing and we may install
# (root with apt-get). Elsewhere it prints what is missing and carries on: the suites that need a
# package then fail with a message naming it.
set -uo pipefail
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: installing ${need[*]}"
  (apt-get update -qq || true) >/dev/null 2>&1
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
else
  echo "system-deps: missing ${need[*]} (install them with your package manager)" >&2
fi
