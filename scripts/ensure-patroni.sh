#!/usr/bin/env bash
# Installs Debian's etcd and Patroni if they are missing (tests/test_failover.py runs a high-availability
# PostgreSQL cluster of them on loopback; without them, those tests are skipped with a message), and stops the
# services the packages start: the tests start their own, as the current user, in temporary directories.
# Never prompts: without root, it uses sudo only where sudo needs no password.
set -euo pipefail
missing=()
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
command -v patroni >/dev/null 2>&1 || missing+=(patroni)
# Patroni talks to etcd through python3-etcd (the first of the alternatives its package depends on): check that
# Patroni's own Python imports its etcd store.
etcd_client_imports() {
  local python
  python=$(head -1 "$(command -v patroni)" | sed -n 's/^#! *\([^ ]*\).*/\1/p')
  "${python:-python3}" -c 'import patroni.dcs.etcd3' >/dev/null 2>&1
}
if command -v patroni >/dev/null 2>&1 && ! etcd_client_imports; then missing+=(python3-etcd); fi
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo -n"; else SUDO=; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || true
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || {
  echo "ensure-patroni.sh: could not install ${missing[*]}: the failover tests will be skipped" >&2
  exit 0
}
if ! etcd_client_imports; then
  echo "ensure-patroni.sh: Patroni cannot import its etcd client (python3-etcd): the failover tests will be skipped" >&2
fi
for service in etcd patroni; do
  $SUDO service "$service" stop >/dev/null 2>&1 || true
done
