#!/bin/bash
# THE test command: prepare the machine, then run the whole suite (unit +
# functional) with pytest.  Extra arguments go to pytest, e.g.
#   tools/run-tests.sh tests/unit -k filters -x
# Exits with pytest's exit code.
#
# Environment knobs:
#   SCHEDULER_TEST_TIMEOUT        per-test timeout in seconds (default 300)
#   SCHEDULER_HYPOTHESIS_PROFILE  hypothesis profile (default "ci":
#                                 derandomized, no deadline; chosen by
#                                 tests/conftest.py, as in a plain
#                                 python3 -m pytest)
#   SCHEDULER_TEST_SKIP_SERVERS=1 skip tests needing RabbitMQ/PostgreSQL/
#                                 MariaDB instead of failing
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash tools/test-setup.sh || {
    rc=$?
    echo "run-tests: tools/test-setup.sh failed (exit $rc)" >&2
    exit "$rc"
}

# No positional test paths here: pytest then uses testpaths from
# pyproject.toml (the whole tests/ tree) unless the caller passes some.
exec python3 -m pytest \
    -p no:cacheprovider \
    -q -ra \
    --durations=15 \
    --timeout="${SCHEDULER_TEST_TIMEOUT:-300}" \
    "$@"
