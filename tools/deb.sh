#!/bin/sh
# make deb: dist/fluence_VERSION_ARCH.deb for the build machine's
# architecture, built by debhelper (debian/) from a copy of the source tree
# in build/deb, checked by lintian (any error fails), then installed by
# spec/release_spec.lua into a scratch root (dpkg -x) and run.
#
#   tools/deb.sh VERSION
#
# debian/changelog is written here from VERSION (the version's one place)
# and the last commit: the repository keeps no second copy of the version.
set -eu
cd "$(dirname "$0")/.."
version=$1
arch=$(dpkg --print-architecture)
src=build/deb/fluence-$version
rm -rf build/deb && mkdir -p "$src" dist
# the files git knows (tracked, or new and not ignored): no build outputs
git ls-files -z -c -o --exclude-standard | xargs -0 cp --parents -t "$src"
when=$(git log -1 --format=%cD 2>/dev/null || date -R)
cat > "$src/debian/changelog" <<CHANGELOG
fluence ($version) unstable; urgency=medium

  * Release $version.

 -- fluence developers <dev@fluence.invalid>  $when
CHANGELOG
echo "deb: building fluence $version ($arch) in $src" >&2
(cd "$src" && SOURCE_DATE_EPOCH=$(git -C "$OLDPWD" log -1 --format=%ct 2>/dev/null || date +%s) \
   dpkg-buildpackage -b -us -uc --no-sign >&2)
deb=build/deb/fluence_${version}_$arch.deb
[ -f "$deb" ] || { echo "deb: dpkg-buildpackage made no $deb" >&2; exit 1; }
echo "deb: lintian" >&2
lintian --fail-on error --info --display-level '>=warning' "build/deb/fluence_${version}_$arch.changes" >&2
cp "$deb" dist/
(cd dist && sha256sum "${deb##*/}" > "${deb##*/}.sha256")
echo "deb: dist/${deb##*/}" >&2
sh spec/run spec/release_spec.lua >&2
