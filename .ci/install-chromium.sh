#!/usr/bin/env bash
# Installs Debian's chromium when no headless browser is on PATH; the HTML report test
# (tests/test_html_report.py) opens the generated page in it. Called by .ci/run.
set -euo pipefail
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then
    echo "install-chromium: $b already present ($(command -v "$b"))"
    exit 0
  fi
done
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "install-chromium: installed $(chromium --version 2>/dev/null || echo chromium)"
