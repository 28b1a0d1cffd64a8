#!/bin/sh
# make dist: for each ARCH (amd64, arm64), a release binary (packaging/
# release.mk), checked (tools/glibc-check.sh: glibc <= 2.31, libc only; then
# tools/glibc-oldest-run.sh runs it on Debian 11's glibc 2.31) and tested
# (the CLI specs below against it; arm64 under qemu-user-static),
# then dist/fluence-VERSION-linux-ARCH.tar.gz with its .sha256, and
# dist/fluence.yaml, the krew manifest with those sha256s.
#
#   tools/dist.sh VERSION ARCH...
#
# Tarballs are reproducible: files sorted, owner 0, mtimes SOURCE_DATE_EPOCH
# (else the last commit's time), gzip without a name or time.
set -eu
cd "$(dirname "$0")/.."
version=$1; shift
make=${MAKE:-make}
host=$(dpkg --print-architecture 2>/dev/null || echo amd64)
# The CLI specs a release binary must pass (FLUENCE_BIN): the Go client's
# 60 selections, the select verb, Fluxion's matching corpus.
specs="spec/gocases_cli_spec.lua spec/select_cli_spec.lua spec/match_conformance_spec.lua"
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
mkdir -p dist
rm -f dist/fluence-"$version"-linux-*.tar.gz* dist/fluence.yaml

# Completions and the man page do not depend on the architecture: the
# host's build writes them.
stage=build/dist
rm -rf "$stage" && mkdir -p "$stage/completions"
bin/fluence completion bash > "$stage/completions/fluence.bash"
bin/fluence completion zsh > "$stage/completions/_fluence"
bin/fluence completion fish > "$stage/completions/fluence.fish"

tarballs=
for arch in "$@"; do
  case $arch in
    amd64) triplet=x86_64-linux-gnu cc=x86_64-linux-gnu-gcc qemu=qemu-x86_64-static ;;
    arm64) triplet=aarch64-linux-gnu cc=aarch64-linux-gnu-gcc qemu=qemu-aarch64-static ;;
    *) echo "dist: unknown architecture $arch (amd64 or arm64)" >&2; exit 2 ;;
  esac
  [ "$arch" = "$host" ] && cc=${CC:-cc}
  b=build-release-$arch
  echo "dist: building $b/fluence ($cc)" >&2
  $make --no-print-directory BUILD_SUFFIX=-release-$arch CC="$cc" \
    PKG_CONFIG="env PKG_CONFIG_LIBDIR=/usr/lib/$triplet/pkgconfig:/usr/share/pkgconfig pkg-config" \
    release-binary >&2
  objdump=objdump
  [ "$arch" = "$host" ] || objdump=$triplet-objdump
  sh tools/glibc-check.sh -d "$objdump" "$b/fluence" >&2
  # and run it on Debian 11's glibc itself (skipped, said so, without the archive)
  sh tools/glibc-oldest-run.sh "$arch" "$PWD/$b/fluence" || [ $? = 77 ]

  run=$b/fluence
  if [ "$arch" != "$host" ]; then
    # the specs run the binary through this: qemu, with the target's loader
    # and libc from libc6:ARCH (qemu -L /usr/TRIPLET hangs at the first
    # pthread_create, qemu 7.2)
    run=$b/fluence-qemu
    printf '#!/bin/sh\nexec %s %s/%s/fluence "$@"\n' "$qemu" "$PWD" "$b" > "$run"
    chmod +x "$run"
  fi
  echo "dist: testing $b/fluence${run##*/fluence}: $specs" >&2
  FLUENCE_BIN=$PWD/$run sh spec/run $specs >&2

  d=$stage/$arch
  rm -rf "$d" && mkdir -p "$d"
  "$triplet-strip" -o "$d/fluence" "$b/fluence" 2>/dev/null || strip -o "$d/fluence" "$b/fluence"
  cp -R "$stage/completions" "$d/"
  cp docs/fluence.1 LICENSE README.md "$d/"
  chmod 755 "$d/fluence"
  find "$d" -exec touch -h -d "@$epoch" {} +
  t=dist/fluence-$version-linux-$arch.tar.gz
  (cd "$d" && tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
                  -cf - fluence fluence.1 completions LICENSE README.md) | gzip -9n > "$t"
  (cd dist && sha256sum "${t##*/}" > "${t##*/}.sha256")
  tarballs="$tarballs $t"
  echo "dist: $t $(cut -d' ' -f1 "$t.sha256")" >&2
done
sh tools/krew-manifest.sh -v "v$version" $tarballs > dist/fluence.yaml
echo "dist: dist/fluence.yaml (krew)" >&2
sh spec/run spec/release_spec.lua >&2
