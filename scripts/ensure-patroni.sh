#!/usr/bin/env bash
# Installs Debian's etcd and Patroni if they are missing (tests/test_failover.py runs a high-availability
# PostgreSQL cluster of them on loopback; without them, those tests are skipped with a message), and stops the
# services the packages start: the tests start their own, as the current user, in temporary directories.
set -euo pipefail
missing=()
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
command -v patroni >/dev/null 2>&1 || missing+=(patroni)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || true
# Patroni's etcd client is python3-etcd (the first of the alternatives it depends on).
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || {
  echo "ensure-patroni.sh: could not install ${missing[*]}: the failover tests will be skipped" >&2
  exit 0
}
for service in etcd patroni; do
  $SUDO service "$service" stop >/dev/null 2>&1 || true
done
