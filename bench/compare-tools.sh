#!/bin/sh
# compare-tools.sh — install fio, bonnie++, PostMark and Chromium from
# Debian's packages (when missing) and run the shoal bench lab's tests:
# the agreement test against those tools and the end-to-end tests.
# Usage: bench/compare-tools.sh [go test flags...]   (run as root; see docs/bench.md)
set -eu
cd "$(dirname "$0")/.."

need=""
for pair in fio:fio bonnie++:bonnie++ postmark:postmark chromium:chromium; do
	bin=${pair%%:*} pkg=${pair#*:}
	command -v "$bin" >/dev/null 2>&1 || need="$need $pkg"
done
if [ -n "$need" ]; then
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need
fi

# A missing tool fails the tests instead of skipping them.
SHOAL_REQUIRE_SERVICES=1 exec go test -count=1 -timeout 30m -v "$@" ./tests/benchlab
