#!/usr/bin/env bash
# Make sure LibreOffice Impress is present: the deck-file tests convert the PowerPoint file with it, to show that it
# opens without repair. Installs it with apt-get when running as root (CI) or with password-less sudo; otherwise
# explains (that test is then skipped).
set -u
command -v soffice >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
  echo "note: LibreOffice missing; the PowerPoint conversion test is skipped. Install with: sudo apt-get install libreoffice-impress" >&2
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "note: no apt-get here; install LibreOffice Impress for the PowerPoint conversion test" >&2
  exit 0
fi
echo "installing libreoffice-impress with apt-get ..."
$SUDO apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends libreoffice-impress >/dev/null
