#!/usr/bin/env bash
# What the expensive test tiers need, where this machine may provide it: Debian's chromium (tests/e2e drives
# it through Playwright; never `playwright install`), a local PostgreSQL server (.ci/postgres.sh) and a one-node
# Slurm cluster (.ci/slurm.sh, for tests/cluster). They need root and apt-get; without them nothing changes and the
# test run ends by naming the tiers it skipped and why. Prints on stdout, for the caller to `eval`, nothing but
# `export` lines: COMPILE_LAB_TEST_PG (the PostgreSQL URL, empty when there is none) and COMPILE_LAB_TEST_SLURM (the
# cluster's slurm.conf, empty when there is none).
set -uo pipefail
cd "$(dirname "$0")/.."
exec 3>&1 1>&2  # progress to stderr; stdout carries only the exports
say() { echo "export $1=$(printf %q "$2")" >&3; }

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "tests: not root or no apt-get here: chromium, PostgreSQL and Slurm are used only if already present"
    say COMPILE_LAB_TEST_PG "${COMPILE_LAB_TEST_PG:-}"
    say COMPILE_LAB_TEST_SLURM "${COMPILE_LAB_TEST_SLURM:-}"
    exit 0
fi
if [ ! -x /usr/bin/chromium ]; then
    { apt-get update -q && apt-get install -y -q chromium chromium-driver; } || echo "tests: installing chromium failed"
fi
if [ -n "${COMPILE_LAB_TEST_PG:-}" ]; then
    say COMPILE_LAB_TEST_PG "$COMPILE_LAB_TEST_PG"
else
    say COMPILE_LAB_TEST_PG "$(.ci/postgres.sh || echo "tests: PostgreSQL could not be started" >&2)"
fi
if [ -n "${COMPILE_LAB_TEST_SLURM:-}" ]; then
    say COMPILE_LAB_TEST_SLURM "$COMPILE_LAB_TEST_SLURM"
else
    say COMPILE_LAB_TEST_SLURM "$(.ci/slurm.sh || echo "tests: Slurm could not be started" >&2)"
fi
