#!/usr/bin/env bash
# A throwaway PostgreSQL server for the shared-queue tests, from Debian's `postgresql` package
# (installed with apt when missing; needs root for that). The cluster lives in a temporary
# directory, listens on 127.0.0.1 only, and trusts local connections: tests only.
#
#   eval "$(scripts/test-postgres.sh start)"   # prints: export PROOFLINE_TEST_POSTGRES_URL=...
#   scripts/test-postgres.sh stop
#
# PROOFLINE_TEST_PG_DIR (default /tmp/proofline-test-pg) and PROOFLINE_TEST_PG_PORT (default
# 55432) choose where and on which port.
set -euo pipefail

dir="${PROOFLINE_TEST_PG_DIR:-/tmp/proofline-test-pg}"
port="${PROOFLINE_TEST_PG_PORT:-55432}"

pg_bin() {
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

# Runs a PostgreSQL command as the cluster's owner: the `postgres` user when we are root
# (the server refuses to run as root), else ourselves.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    su postgres -s /bin/sh -c "$*"
  else
    sh -c "$*"
  fi
}

case "${1:-}" in
  start)
    if [ -z "$(pg_bin)" ]; then
      echo "installing postgresql (Debian package)" >&2
      apt-get update -qq >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    fi
    bin="$(pg_bin)"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      rm -rf "$dir"
      mkdir -p "$dir"
      [ "$(id -u)" = 0 ] && chown postgres "$dir"
      as_owner "'$bin/initdb' -D '$dir/data' -A trust -U postgres" >/dev/null
    fi
    if ! as_owner "'$bin/pg_ctl' -D '$dir/data' status" >/dev/null 2>&1; then
      as_owner "'$bin/pg_ctl' -D '$dir/data' -l '$dir/server.log' -w \
        -o \"-p $port -k '$dir' -c listen_addresses=127.0.0.1\" start" >&2
    fi
    echo "export PROOFLINE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:$port/postgres"
    ;;
  stop)
    bin="$(pg_bin)"
    if [ -n "$bin" ] && [ -d "$dir/data" ]; then
      as_owner "'$bin/pg_ctl' -D '$dir/data' -m fast -w stop" >&2 || true
    fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
