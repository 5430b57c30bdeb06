#!/usr/bin/env bash
# A Debian bookworm chroot with R's prophet (r-cran-prophet) for bench/plan_bench.sh. Prophet
# cannot be installed beside titan's build: r-cran-prophet pulls libboost1.74-dev, which conflicts
# with libboost1.81-dev. So it lives in its own minimal root tree, never on the host, never in CI.
#
#   sudo bash bench/prophet_chroot.sh [DIR]
# DIR defaults to /var/tmp/titan-prophet-chroot. Idempotent: an existing tree is reused and only
# what is missing is installed. Needs root, debootstrap (apt-get install debootstrap) and network
# to deb.debian.org. About 700 MB on disk.
set -euo pipefail
dir=${1:-/var/tmp/titan-prophet-chroot}
mirror=http://deb.debian.org/debian
say() { echo "prophet_chroot: $*"; }

if [[ $(id -u) -ne 0 ]]; then
  echo "prophet_chroot: needs root (debootstrap and chroot); run it with sudo" >&2
  exit 1
fi
if ! command -v debootstrap >/dev/null; then
  echo "prophet_chroot: debootstrap is missing; install it with: apt-get install -y debootstrap" >&2
  exit 1
fi

# debootstrap leaves /debootstrap behind until its second stage is done: a tree with it is an
# interrupted run and is finished, not trusted.
if [[ -x $dir/usr/bin/apt-get && ! -d $dir/debootstrap ]]; then
  say "reusing the bookworm tree in $dir"
else
  say "debootstrap --variant=minbase bookworm $dir $mirror"
  mkdir -p "$dir"
  debootstrap --variant=minbase bookworm "$dir" "$mirror"
fi

in_root() { chroot "$dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
# shellcheck disable=SC2016  # ${Version} is dpkg-query's field, not the shell's
prophet_version() { in_root dpkg-query -W -f '${Version}' r-cran-prophet; }

if in_root Rscript -e 'suppressMessages(library(prophet))' >/dev/null 2>&1; then
  say "prophet is already installed: $(prophet_version)"
else
  # apt inside needs the host's name resolution; /proc for R and Stan's compiler.
  cp /etc/resolv.conf "$dir/etc/resolv.conf"
  mountpoint -q "$dir/proc" || mount -t proc proc "$dir/proc"
  trap 'umount "$dir/proc" 2>/dev/null || true' EXIT
  # dpkg-dev: Debian's RcppParallel (prophet -> rstan) runs dpkg-architecture when it loads and
  # fails without it, yet does not depend on it.
  say "apt-get install --no-install-recommends r-base-core r-cran-prophet dpkg-dev (in $dir)"
  in_root apt-get update
  in_root apt-get install -y --no-install-recommends r-base-core r-cran-prophet dpkg-dev
  in_root apt-get clean
  say "installed r-cran-prophet $(prophet_version)"
fi
say "ready: chroot $dir Rscript ..."
