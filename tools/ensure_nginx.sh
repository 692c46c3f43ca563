#!/usr/bin/env bash
# Make sure Debian's nginx is present (`make serve` and its browser test put it in front of the workers).
# Installs it with apt-get when running as root (CI) or with password-less sudo; otherwise explains.
# The package's own service is never started or enabled here: `make serve` runs nginx as the user.
set -u
if command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then exit 0; fi
if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
  echo "note: nginx missing; make serve cannot start and its browser test is skipped. Install with: sudo apt-get install nginx" >&2
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "note: no apt-get here; install nginx with your package manager for make serve and its browser test" >&2
  exit 0
fi
echo "installing nginx with apt-get ..."
$SUDO apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nginx >/dev/null
