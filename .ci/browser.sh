#!/usr/bin/env bash
# Install what the browser tests need on a Debian CI machine (run as root; safe to run again): Debian's
# headless-capable Chromium (tests/harness/browser.py launches it through Playwright) and fonts for every language the bot
# speaks, Arabic included (fonts-noto-core: Noto Sans/Naskh Arabic; fonts-dejavu-core: the Latin and
# Cyrillic fallback). apt-get update runs only when something is missing.
set -euo pipefail

readonly PACKAGES=(chromium fonts-noto-core fonts-dejavu-core)

missing=()
for package in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "${package}" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("${package}")
    fi
done

if ((${#missing[@]})); then
    echo "browser.sh: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi
chromium --version >&2
