#!/bin/sh
# Prepares the real Kubernetes API server the cluster specs run against,
# following envtest's convention (controller-runtime): a directory with
# `kube-apiserver` and `etcd`, named by KUBEBUILDER_ASSETS.  The specs
# (spec/support/envtest.lua) start and stop the server themselves.
#
# KUBEBUILDER_ASSETS set: nothing to do.  Otherwise, when the workplace's
# ../shared/envtest is beside the repository, build/envtest is made from it
# (its `cluster assets` installs Debian's etcd-server when run as root).
# Without either, the cluster specs are skipped and say how to run them.
set -u
if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then exit 0; fi
shared=../shared/envtest/cluster
if [ -x build/envtest/kube-apiserver ] && [ -x build/envtest/etcd ]; then exit 0; fi
if [ ! -x "$shared" ]; then
  echo "envtest: no KUBEBUILDER_ASSETS and no ../shared/envtest: the real-API-server specs will be skipped"
  exit 0
fi
if ! out=$("$shared" assets build/envtest 2>&1); then
  printf 'envtest: could not prepare build/envtest (the real-API-server specs will be skipped):\n%s\n' "$out"
fi
exit 0
