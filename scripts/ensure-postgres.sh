#!/usr/bin/env bash
# Installs the distribution's PostgreSQL server if it is missing (the tests start a throwaway one on loopback).
set -euo pipefail
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
# The package may start a cluster of its own; the tests do not use it.
$SUDO service postgresql stop >/dev/null 2>&1 || true
