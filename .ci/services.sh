#!/usr/bin/env bash
# What the expensive test tiers need, where this machine may provide it: Debian's chromium (tests/e2e drives
# it through Playwright; never `playwright install`) and a local PostgreSQL server (.ci/postgres.sh). Both
# need root and apt-get; without them nothing changes and the test run ends by naming the tiers it skipped
# and why. Prints the URL for COMPILE_LAB_TEST_PG on stdout (empty when there is none), nothing else.
set -uo pipefail
cd "$(dirname "$0")/.."
exec 3>&1 1>&2  # progress to stderr; stdout carries only the URL

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "tests: not root or no apt-get here: chromium and PostgreSQL are used only if already present"
    echo "${COMPILE_LAB_TEST_PG:-}" >&3
    exit 0
fi
if [ ! -x /usr/bin/chromium ]; then
    { apt-get update -q && apt-get install -y -q chromium chromium-driver; } || echo "tests: installing chromium failed"
fi
if [ -n "${COMPILE_LAB_TEST_PG:-}" ]; then
    echo "$COMPILE_LAB_TEST_PG" >&3
else
    .ci/postgres.sh >&3 || echo "tests: PostgreSQL could not be started"
fi
