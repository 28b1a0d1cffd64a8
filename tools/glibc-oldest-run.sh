#!/bin/sh
# Runs a release binary on the oldest glibc it claims (2.31: Debian 11's),
# not merely checks its symbol versions: Debian 11's libc6 for ARCH is
# fetched from the Debian archive with a private apt configuration (the
# machine's own is not touched), unpacked under build/glibc-2.31-ARCH, and
# the binary runs under that libc's dynamic loader: `fluence version` and a
# selection of the quickstart example.  arm64 runs under qemu-user-static.
#
#   tools/glibc-oldest-run.sh ARCH BINARY
#
# Exit 0 when it ran; 1 when it failed there; 77 (skipped, with a note)
# when Debian 11's libc6 cannot be fetched (no network to the archive).
set -eu
cd "$(dirname "$0")/.."
arch=$1 bin=$2
case $arch in
  amd64) triplet=x86_64-linux-gnu loader=ld-linux-x86-64.so.2 run= ;;
  arm64) triplet=aarch64-linux-gnu loader=ld-linux-aarch64.so.1 run=qemu-aarch64-static ;;
  *) echo "glibc-oldest-run: unknown architecture $arch" >&2; exit 2 ;;
esac
root=$PWD/build/glibc-2.31-$arch
if [ ! -x "$root/lib/$triplet/$loader" ]; then
  apt=$PWD/build/glibc-2.31-apt
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bullseye main" \
    > "$apt/sources.list"
  o="-o Dir::Etc::sourcelist=$apt/sources.list -o Dir::Etc::sourceparts=- -o Dir::State::Lists=$apt/lists
     -o Dir::Cache=$apt/cache -o Dir::State::status=/dev/null -o APT::Architectures::=$arch
     -o APT::Sandbox::User=root -o Debug::NoLocking=1"
  if ! apt-get $o update >/dev/null 2>&1; then
    echo "glibc-oldest-run: skipped: Debian 11's package lists cannot be fetched" >&2
    exit 77
  fi
  v=$(apt-cache $o madison libc6 | awk '{print $3; exit}')
  (cd "$apt/debs" && apt-get $o download "libc6:$arch=$v" >/dev/null 2>&1) || {
    echo "glibc-oldest-run: skipped: Debian 11's libc6 cannot be fetched" >&2
    exit 77
  }
  rm -rf "$root" && mkdir -p "$root"
  dpkg -x "$apt/debs"/libc6_*_"$arch".deb "$root"
  echo "$v" > "$root/libc6-version"
fi
lib=$root/lib/$triplet
version=$($run "$lib/$loader" --library-path "$lib" "$bin" version)
case $version in
  "fluence "*) ;;
  *) echo "glibc-oldest-run: $bin version on glibc 2.31 printed: $version" >&2; exit 1 ;;
esac
$run "$lib/$loader" --library-path "$lib" "$bin" select -f examples/quickstart/job.yaml \
  --attributes examples/quickstart/attributes.yaml --offline > /dev/null 2>&1 || {
  echo "glibc-oldest-run: $bin select failed on glibc 2.31" >&2; exit 1; }
# a user provider: its calls are watched by the time limit's thread
# (pthread_create), which the built-ins never start
FLUENCE_GPU_CATALOG=examples/gpu-catalog/catalog.csv $run "$lib/$loader" --library-path "$lib" "$bin" \
  select -f examples/quickstart/job.yaml --provider-dir examples/providers --provider gpu-pricing \
  --offline > /dev/null 2>&1 || {
  echo "glibc-oldest-run: $bin select with a user provider failed on glibc 2.31" >&2; exit 1; }
# a stream parsed on two threads (pthread_create, pthread_sigmask, pthread_join)
{ cat examples/quickstart/job.yaml; echo ---; cat examples/quickstart/job.yaml; } |
  FLUENCE_MANIFEST_SPLIT=1 $run "$lib/$loader" --library-path "$lib" "$bin" select -f - \
  --attributes examples/quickstart/attributes.yaml --offline > /dev/null 2>&1 || {
  echo "glibc-oldest-run: $bin select of a stream split in two failed on glibc 2.31" >&2; exit 1; }
echo "glibc-oldest-run: $bin runs on Debian 11's glibc (libc6 $(cat "$root/libc6-version"))" >&2
