#!/bin/sh
# Installs the Debian packages given as arguments when any is missing:
# with apt-get when root, otherwise prints the exact command to run.
missing=""
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "fluence: installing$missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends $missing >&2
else
  echo "fluence: missing Debian packages; run:" >&2
  echo "  sudo apt-get install -y$missing" >&2
  exit 1
fi
