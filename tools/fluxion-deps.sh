#!/bin/sh
# The Debian runtime packages Fluxion v0.54 (../shared/fluxion: libreapi_cli.so
# and resource-query, see its README) needs, so that the specs comparing
# fluence with Fluxion run.  Nothing to do without ../shared/fluxion.
here=$(cd "$(dirname "$0")/.." && pwd)
[ -d "$here/../shared/fluxion" ] || exit 0
exec sh "$here/tools/deps.sh" libhwloc15 libboost-graph1.74.0 libboost-regex1.74.0 libjansson4 \
  libyaml-cpp0.7 libedit2 libudev1 libuuid1 libicu72
