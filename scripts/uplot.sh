#!/usr/bin/env bash
# Provides uPlot (https://github.com/leeoniya/uPlot, MIT), the plotting library `titan report`
# inlines into its self-contained HTML pages, from npm once per machine.
#
#   bash scripts/uplot.sh          # prints the directory holding uPlot.iife.min.js, uPlot.min.css
#
# Contract:
#   stdout: one line, the directory (…/uplot/<version>/dist); progress and errors go to stderr.
#   exit:   0 when both files exist; non-zero with a message otherwise.
#   cache:  ${TITAN_CACHE_DIR:-$HOME/.cache/titan}/uplot/<version>/, outside the clone. A valid
#           entry is returned without touching the network. The tarball's sha512 must equal the
#           integrity pinned below (the registry's `dist.integrity`), so a changed package is
#           refused instead of being built into titan.
# CMake reads the files at configure time (TITAN_UPLOT_DIR, which defaults to this cache), and
# scripts/build.sh runs this script first.
set -euo pipefail

VERSION=1.6.32
INTEGRITY=sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw==

die() {
  echo "uplot: error: $*" >&2
  exit 1
}
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi

dest="${TITAN_CACHE_DIR:-$HOME/.cache/titan}/uplot/$VERSION"
if [ -f "$dest/dist/uPlot.iife.min.js" ] && [ -f "$dest/dist/uPlot.min.css" ]; then
  echo "$dest/dist"
  exit 0
fi
command -v npm >/dev/null || die "npm is not installed (bash scripts/bootstrap.sh installs it)"
mkdir -p "$(dirname "$dest")"
tmp=$(mktemp -d "$dest.tmp-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "uplot: fetching uplot@$VERSION from npm" >&2
(cd "$tmp" && npm pack --silent "uplot@$VERSION" >/dev/null) ||
  die "npm pack uplot@$VERSION failed (no registry access and no npm cache?)"
tarball="$tmp/uplot-$VERSION.tgz"
[ -f "$tarball" ] || die "npm pack did not write $tarball"
got="sha512-$(python3 -c 'import base64, hashlib, sys
print(base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$tarball")"
[ "$got" = "$INTEGRITY" ] || die "uplot@$VERSION tarball has integrity $got, expected $INTEGRITY"
tar -xzf "$tarball" -C "$tmp" package/dist/uPlot.iife.min.js package/dist/uPlot.min.css \
  package/LICENSE
mkdir -p "$tmp/out"
mv "$tmp/package/dist" "$tmp/package/LICENSE" "$tmp/out/"
rm -rf "$dest"
mv "$tmp/out" "$dest"
echo "uplot: cached in $dest" >&2
echo "$dest/dist"
