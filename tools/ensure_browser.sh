#!/usr/bin/env bash
# Make sure Debian's chromium and the CJK fonts are present (browser tests, image export).
# Installs them with apt-get when running as root (CI) or with password-less sudo; otherwise explains.
set -u
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if ! fc-list 2>/dev/null | grep -qi "Noto Sans CJK"; then need+=(fonts-noto-cjk); fi
if ! fc-list 2>/dev/null | grep -qi "Noto Color Emoji"; then need+=(fonts-noto-color-emoji); fi
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ]; then SUDO=""; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
  echo "note: ${need[*]} missing; browser tests will be skipped. Install with: sudo apt-get install ${need[*]}" >&2
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "note: no apt-get here; install ${need[*]} with your package manager for browser tests and image export" >&2
  exit 0
fi
echo "installing ${need[*]} with apt-get ..."
$SUDO apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
