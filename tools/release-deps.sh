#!/bin/sh
# Installs the Debian packages a release build needs (tools/deps.sh), first
# adding the foreign architecture of any PKG:ARCH among them
# (dpkg --add-architecture, then apt-get update), when root.
set -e
for p in "$@"; do
  case $p in
    *:*) arch=${p#*:}
         if ! dpkg --print-foreign-architectures | grep -qx "$arch" && [ "$(dpkg --print-architecture)" != "$arch" ]; then
           if [ "$(id -u)" != 0 ]; then
             echo "fluence: the release build needs the $arch architecture; run:" >&2
             echo "  sudo dpkg --add-architecture $arch && sudo apt-get update" >&2
             exit 1
           fi
           echo "fluence: adding the $arch architecture" >&2
           dpkg --add-architecture "$arch"
           apt-get update -qq >&2
         fi ;;
  esac
done
exec sh "$(dirname "$0")/deps.sh" "$@"
