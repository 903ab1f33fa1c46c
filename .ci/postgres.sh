#!/usr/bin/env bash
# A local PostgreSQL server for the test suite, from Debian's packages: installs it if missing, starts
# a cluster, makes a role `lab` (password lab, may create databases: every test gets a fresh one) and a
# database `lab_test`. Run as root. Prints the URL for COMPILE_LAB_TEST_PG on stdout, nothing else.
set -euo pipefail
exec 3>&1 1>&2  # progress to stderr; stdout carries only the URL

if ! compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql
fi
version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
if [ -z "$(pg_lsclusters -h)" ]; then  # the package makes a cluster "main"; make one if it is gone
  pg_createcluster "$version" main
fi
read -r version cluster port status _ <<<"$(pg_lsclusters -h | head -n 1)"
if [ "$status" != online ]; then
  # no systemd needed; runs the server as user postgres. The server must not inherit fd 3 (the
  # caller's $(...) pipe): a daemon holding it open keeps the command substitution waiting forever.
  pg_ctlcluster "$version" "$cluster" start 3>&- </dev/null
fi
for _ in $(seq 60); do pg_isready -q -h localhost -p "$port" && break; sleep 0.5; done
pg_isready -h localhost -p "$port"

as_postgres() { su postgres -c "psql -p $port -v ON_ERROR_STOP=1 -qtA $*"; }
if [ -z "$(as_postgres "-c \"SELECT 1 FROM pg_roles WHERE rolname = 'lab'\"")" ]; then
  as_postgres "-c \"CREATE ROLE lab LOGIN PASSWORD 'lab' CREATEDB\""
fi
# each test drops its database WITH (FORCE); an autovacuum worker still in it can be ended only with this role
as_postgres "-c \"GRANT pg_signal_backend TO lab\"" 2>/dev/null || true
if [ -z "$(as_postgres "-c \"SELECT 1 FROM pg_database WHERE datname = 'lab_test'\"")" ]; then
  as_postgres "-c \"CREATE DATABASE lab_test OWNER lab\""
fi
echo "postgresql+psycopg://lab:lab@localhost:$port/lab_test" >&3
