#!/usr/bin/env bash
# Install Debian's Chromium for the browser tests (tests/browser), if it is missing.
#
# Why Debian's package and not `playwright install`: the lab's machines reach package
# registries (apt, PyPI) but not Playwright's own download CDN, and a distribution
# package gets security updates with the rest of the system. Playwright's Python API
# drives it through `executable_path`.
#
# Idempotent and quick when Chromium is already there (no apt call at all). Needs root
# (or sudo) the first time; CI runs as root on a fresh machine.
#
#   scripts/install-chromium.sh          install if missing, print the binary's path
#   CHROMIUM=/path/to/chrome scripts/... use that binary instead (nothing installed)
set -euo pipefail

find_chromium() {
    local candidate
    for candidate in "${CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
        if [ -n "$candidate" ] && [ -x "$candidate" ]; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

if path=$(find_chromium); then
    echo "$path"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-chromium: no Chromium found and no apt-get on this machine;" \
         "install Chromium yourself and set CHROMIUM=/path/to/chromium" >&2
    exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install-chromium: need root (or sudo) to apt-get install chromium" >&2
        exit 1
    fi
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-chromium: installing Debian's chromium (apt-get update + install)..." >&2
# DPkg::Lock::Timeout: wait for another apt-get (make test installs debootstrap beside
# the parallel part; a cold CI run's browser test failed on the lock) instead of failing.
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2

if path=$(find_chromium); then
    echo "$path"
    exit 0
fi
echo "install-chromium: apt-get finished but no chromium binary was found" >&2
exit 1
