#!/usr/bin/env bash
# Headless Chromium and its WebDriver for the audit page's browser test (Debian packages
# chromium and chromium-driver). Installs them when missing, as root with apt-get; where that
# is not possible it says why, and the browser test is skipped with the same reason.
set -uo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "note: chromium and chromium-driver are not installed and cannot be (needs root and apt-get);" \
       "the audit page's browser test will be skipped" >&2
  exit 0
fi
log=$(mktemp)
if (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver) >"$log" 2>&1; then
  echo "installed chromium and chromium-driver"
else
  tail -5 "$log" >&2
  echo "note: apt-get could not install chromium and chromium-driver; the audit page's browser test will be skipped" >&2
fi
rm -f "$log"
exit 0
