#!/usr/bin/env bash
# Bring up a local PostgreSQL for the benchmark (bench/run.py) on a throwaway machine (run as root; safe to run
# again). The test suite makes a cluster of its own instead (tests/harness/provision.py).
# NOT for a developer's machine: it turns fsync, synchronous_commit and full_page_writes off on the machine's
# first cluster, which may hold real data. CONTRIBUTING.md shows a throwaway container or a cluster of its own.
# Installs the server if missing, starts the cluster, creates role `bot` (password `bot`, may create
# databases: the tests make one per test) and database `bot_test`, then prints the URL on stdout:
#   export TEST_POSTGRES_URL="$(bash .ci/postgres.sh)"
# Everything else goes to stderr so the command substitution above captures only the URL.
set -euo pipefail

readonly ROLE=bot
readonly PASSWORD=bot
readonly DATABASE=bot_test
readonly PORT=5432
readonly URL="postgresql+asyncpg://${ROLE}:${PASSWORD}@127.0.0.1:${PORT}/${DATABASE}"

log() { echo "postgres.sh: $*" >&2; }

# psql as the postgres superuser; cd / because postgres cannot read root's working directory.
as_postgres() { (cd / && su postgres -c "psql -v ON_ERROR_STOP=1 -qtA -p ${PORT} $(printf '%q ' "$@")"); }

if ! compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; then
    log "installing postgresql"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q postgresql >&2
fi

# Debian's package creates the `main` cluster; an image built with create_main_cluster=false has none.
if [[ -z "$(pg_lsclusters --no-header 2>/dev/null)" ]]; then
    version="$(basename "$(ls -d /usr/lib/postgresql/*/ | sort -V | tail -n 1)")"
    log "creating cluster ${version}/main"
    pg_createcluster "${version}" main --port "${PORT}" >&2
fi

read -r version cluster _port status _rest < <(pg_lsclusters --no-header | head -n 1)
if [[ "${status}" != online* ]]; then
    log "starting cluster ${version}/${cluster}"
    pg_ctlcluster "${version}" "${cluster}" start >&2
fi

for _ in $(seq 1 60); do
    if pg_isready -q -h 127.0.0.1 -p "${PORT}"; then break; fi
    sleep 0.5
done
pg_isready -h 127.0.0.1 -p "${PORT}" >&2

# A throwaway test server: durability buys nothing here and fsync makes CREATE DATABASE slow.
as_postgres -c "ALTER SYSTEM SET fsync = off" \
    -c "ALTER SYSTEM SET synchronous_commit = off" \
    -c "ALTER SYSTEM SET full_page_writes = off" \
    -c "SELECT pg_reload_conf()" >/dev/null

as_postgres -c "DO \$\$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${ROLE}') THEN
        CREATE ROLE ${ROLE} LOGIN CREATEDB PASSWORD '${PASSWORD}';
    ELSE
        ALTER ROLE ${ROLE} LOGIN CREATEDB PASSWORD '${PASSWORD}';
    END IF;
END \$\$;"

if [[ -z "$(as_postgres -c "SELECT 1 FROM pg_database WHERE datname = '${DATABASE}'")" ]]; then
    log "creating database ${DATABASE}"
    as_postgres -c "CREATE DATABASE ${DATABASE} OWNER ${ROLE}"
fi

echo "${URL}"
