#!/bin/sh
# Fills the krew manifest template (docs/krew/fluence.yaml) for a release:
# each TARBALL's sha256 and download URI go to the platform named in its
# file name (fluence-[v]X.Y.Z-linux-ARCH.tar.gz, ARCH amd64|arm64), as
# `make dist` makes them (tools/dist.sh).
#
#   tools/krew-manifest.sh [-b BASE_URL] [-v VERSION] [-p] TARBALL... > fluence.yaml
#
#   -b  where the tarballs are published (default
#       https://github.com/converged-computing/fluence/releases/download/VERSION)
#   -v  the release version, vX.Y.Z (default: from the tarball names, else
#       v and the file VERSION)
#   -p  partial: allow platforms without a tarball (their placeholders remain)
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
template=$here/docs/krew/fluence.yaml
base= version= partial=
while getopts b:v:p opt; do
    case $opt in
        b) base=$OPTARG ;;
        v) version=$OPTARG ;;
        p) partial=1 ;;
        *) echo "usage: $0 [-b BASE_URL] [-v VERSION] [-p] TARBALL..." >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-b BASE_URL] [-v VERSION] [-p] TARBALL..." >&2; exit 2; }

sha256() {
    if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d' ' -f1
    else shasum -a 256 "$1" | cut -d' ' -f1; fi
}

script=
for tarball in "$@"; do
    [ -f "$tarball" ] || { echo "krew-manifest: $tarball: no such file" >&2; exit 3; }
    name=$(basename "$tarball")
    platform=$(echo "$name" | sed -n 's/.*-\(linux\)-\(amd64\|arm64\)\.tar\.gz$/\1_\2/p')
    [ -n "$platform" ] || {
        echo "krew-manifest: $name: expected a name ending in -linux-(amd64|arm64).tar.gz" >&2
        exit 3
    }
    v=$(echo "$name" | sed -n 's/^fluence-v\{0,1\}\([0-9][^-]*\)-linux-.*/v\1/p')
    if [ -z "$version" ] && [ -n "$v" ]; then version=$v; fi
    key=$(echo "$platform" | tr a-z A-Z)
    sum=$(sha256 "$tarball")
    script="$script
s|@SHA256_${key}@|${sum}|
s|@URI_${key}@|@BASE@/${name}|"
done
version=${version:-v$(cat "$here/VERSION")}
base=${base:-https://github.com/converged-computing/fluence/releases/download/$version}

out=$(sed -e "$script" -e "s|@BASE@|${base%/}|g" -e "s|@VERSION@|${version}|" \
          -e '1,/^apiVersion/{/^apiVersion/!d;}' "$template")
if printf '%s\n' "$out" | grep -q '"@[A-Z0-9_]*@"'; then
    missing=$(printf '%s\n' "$out" | sed -n 's/.*"@SHA256_\([A-Z0-9_]*\)@".*/\1/p' | tr '\n' ' ')
    if [ -z "$partial" ]; then
        echo "krew-manifest: no tarball for: $missing(give one per platform, or -p)" >&2
        exit 1
    fi
    echo "krew-manifest: warning: placeholders left for: $missing" >&2
fi
printf '%s\n' "$out"
