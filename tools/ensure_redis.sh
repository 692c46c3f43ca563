#!/usr/bin/env bash
# Make sure Debian's redis-server is present: the tests of the live lecture rooms' Redis store start their own
# redis-server on a free loopback port (a deployment with ATTN_STORE=redis://... runs its own Redis).
# Installs it with apt-get when running as root (CI) or with password-less sudo; otherwise explains.
# The package's own service is never started or enabled here.
set -u
if command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ]; then exit 0; fi
if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
  echo "note: redis-server missing; the rooms' Redis tests are skipped. Install with: sudo apt-get install redis-server" >&2
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "note: no apt-get here; install redis-server with your package manager for the rooms' Redis tests" >&2
  exit 0
fi
echo "installing redis-server with apt-get ..."
# another apt (an earlier step of CI, the machine's own updates) may hold the dpkg lock: wait for it
$SUDO apt-get update -qq -o DPkg::Lock::Timeout=300 >/dev/null &&
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -o DPkg::Lock::Timeout=300 redis-server >/dev/null
# Debian's package starts its service where it can (not in CI's containers): the tests need none of it
