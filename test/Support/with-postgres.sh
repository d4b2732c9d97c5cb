#!/usr/bin/env bash
#===- test/Support/with-postgres.sh - Run a command beside a PostgreSQL ----===#
#
# Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
#===------------------------------------------------------------------------===#
#
# Usage: with-postgres.sh COMMAND [ARGUMENT...]
#
# Starts a throwaway PostgreSQL server (initdb, then pg_ctl) in a temporary
# folder, listening only on a Unix socket there, runs COMMAND with
#   KOPT_TEST_POSTGRES_HOST  the socket's folder
#   KOPT_TEST_POSTGRES_PORT  its port
#   KOPT_TEST_POSTGRES_URL   postgresql:// URL of the server's 'postgres'
#                            database, as the superuser 'postgres' (trust)
# and exits with COMMAND's status. The server is stopped and the folder
# removed however COMMAND ends; a watchdog does it even when this script is
# killed outright. PostgreSQL refuses to run as root: as root the server
# runs as the 'postgres' user. Exits 77 (skip) when the PostgreSQL server
# binaries are absent (Debian's postgresql package installs them in
# /usr/lib/postgresql/VERSION/bin; KOPT_POSTGRES_BINDIR overrides).
#
#===------------------------------------------------------------------------===#
set -euo pipefail

bindir="${KOPT_POSTGRES_BINDIR:-}"
if [ -z "$bindir" ]; then
  for candidate in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$candidate/initdb" ] && [ -x "$candidate/pg_ctl" ]; then
      bindir="$candidate"
      break
    fi
  done
fi
if [ -z "$bindir" ] && command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
  bindir="$(dirname "$(command -v initdb)")"
fi
if [ -z "$bindir" ]; then
  echo "with-postgres: skipped: no PostgreSQL server binaries (initdb, pg_ctl);" \
    "install Debian's postgresql package (scripts/setup does)"
  exit 77
fi

as_user=()
if [ "$(id -u)" -eq 0 ]; then
  if ! id -u postgres >/dev/null 2>&1; then
    echo "with-postgres: skipped: running as root, and there is no 'postgres' user to run the server"
    exit 77
  fi
  as_user=(runuser -u postgres --)
fi

# Not under $TMPDIR: test runners make it private to their user, which the
# 'postgres' user could not enter, and a Unix socket's path must be short.
dir="$(mktemp -d "${KOPT_POSTGRES_TMPDIR:-/tmp}/kopt-pg-XXXXXX")"
chmod 755 "$dir"
[ ${#as_user[@]} -gt 0 ] && chown postgres "$dir"
port=5432

stop_server() {
  "${as_user[@]}" "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop_server EXIT
trap 'exit 130' INT TERM HUP

# The watchdog outlives a SIGKILL of this script (its own session, no shared
# pipes) and stops the server once this script is gone.
setsid bash -c 'while kill -0 "$0" 2>/dev/null; do sleep 1; done
  if [ -d "$1/data" ]; then
    '"${as_user[*]}"' "$2/pg_ctl" -D "$1/data" -m immediate stop
    rm -rf "$1"
  fi' "$$" "$dir" "$bindir" </dev/null >/dev/null 2>&1 &

if ! "${as_user[@]}" "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust \
    -E UTF8 --no-locale >"$dir/initdb.log" 2>&1; then
  echo "with-postgres: initdb failed:" >&2
  cat "$dir/initdb.log" >&2
  exit 1
fi
if ! "${as_user[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-k $dir -p $port -c listen_addresses='' -c fsync=off -c max_connections=200" \
    start >/dev/null; then
  echo "with-postgres: the server did not start:" >&2
  cat "$dir/server.log" >&2
  exit 1
fi

export KOPT_TEST_POSTGRES_HOST="$dir"
export KOPT_TEST_POSTGRES_PORT="$port"
export KOPT_TEST_POSTGRES_URL="postgresql:///postgres?host=$dir&port=$port&user=postgres"
status=0
"$@" || status=$?
exit "$status"
