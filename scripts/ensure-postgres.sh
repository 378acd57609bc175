#!/usr/bin/env bash
# Installs the distribution's PostgreSQL server if it is missing (the tests start a throwaway one on loopback), and
# PgBouncer and HAProxy (the tests run the service through a pooler and behind a load balancer; without them,
# those tests are skipped with a message).
set -euo pipefail
missing=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ] || missing+=(pgbouncer)
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || missing+=(haproxy)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
if ! $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
  # PostgreSQL is required; the pooler and the load balancer only add tests.
  $SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi
# The packages just installed may start services of their own; the tests do not use them.
for service in "${missing[@]}"; do
  $SUDO service "$service" stop >/dev/null 2>&1 || true
done
