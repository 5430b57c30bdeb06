#!/usr/bin/env bash
# Installs every Debian bookworm package titan needs to build, test and run its demo.
# Idempotent: packages already present are skipped by apt. Needs root (or sudo).
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config clang clang-format libclang-rt-14-dev lld
  # libraries (see docs/architecture.md for why each)
  libgtest-dev libgmock-dev libbenchmark-dev libsimdjson-dev zlib1g-dev libdeflate-dev
  libzstd-dev libxxhash-dev libfmt-dev libcli11-dev nlohmann-json3-dev pybind11-dev
  libcurl4-openssl-dev libyaml-cpp-dev libpugixml-dev
  # titan predict: gradient-boosted survival models; R's survival package as the reference its
  # tests compare with (6 packages with --no-install-recommends, about 10 s on a fresh machine)
  libxgboost-dev r-cran-survival
  # titan plan: R's forecast package, which plan_cli_test's R comparison runs on the same origins
  r-cran-forecast
  # titan diagnose: Hyperscan finds candidate log lines in one pass, RE2 confirms them
  libhyperscan-dev libre2-dev
  # the one HTTP stack (src/http): Boost.Asio + Beast, header-only, with C++20 coroutines
  libboost1.81-dev
  # Python side: the module is built for Debian's interpreter, which has PyTorch
  python3 python3-dev python3-torch python3-numpy python3-pytest
  # real components used by tests
  prometheus etcd-server etcd-client curl procps bc
  # real Ceph RADOS gateway for the S3 checkpoint backend's tests (scripts/rgw.sh)
  ceph-mon ceph-osd radosgw ceph-common
  # side-by-side S3 throughput benchmark
  rclone
  # titan report's tests open the pages in a real browser and look at the screenshots
  chromium-headless-shell python3-pil
  # titan run under a real Slurm (test/cluster: munged, slurmctld, three slurmd on loopback)
  slurmctld slurmd slurm-client munge
  # titan k8s: a real kubectl drives the API stand-in (Debian's kubernetes-client, unless a
  # kubectl is already installed: a packaged one conflicts with it); generated manifests are
  # validated against the LLMJob CRD's openAPIV3 schema
  $(command -v kubectl >/dev/null || echo kubernetes-client) python3-jsonschema
  # titan run: native stacks of hung workers (eu-stack)
  elfutils
  # llama.cpp's llama-server for serving tests (scripts/llama_server.sh); npm only where no npm
  # is on PATH: NodeSource's nodejs bundles npm and conflicts with Debian's npm package
  nodejs git $(command -v npm >/dev/null || echo npm)
)

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#PACKAGES[@]} packages present"
  exit 0
fi
echo "bootstrap: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts these as services on install; titan's tests start their own instances. (The
# ceph packages start only their systemd targets: no daemon, as no instance is enabled.)
for svc in prometheus etcd; do
  if command -v systemctl >/dev/null && systemctl is-active --quiet "$svc" 2>/dev/null; then
    $SUDO systemctl stop "$svc" || true
  fi
done
echo "bootstrap: done"
