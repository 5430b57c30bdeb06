#!/usr/bin/env bash
# Provides llama.cpp's real llama-server and a tiny random-weights model for titan's serving
# tests (`titan load`), built from the llama.cpp source that the npm package node-llama-cpp
# ships (package/llama/gitRelease.bundle, a git bundle), so nothing but npm and apt is needed.
#
#   eval "$(bash scripts/llama_server.sh)"    # sets LLAMA_SERVER and TITAN_LLAMA_MODEL
#   bash scripts/llama_server.sh --help
#
# Contract:
#   stdout: exactly two shell-evaluable lines, LLAMA_SERVER=<binary> and
#           TITAN_LLAMA_MODEL=<tiny .gguf>; progress and errors go to stderr.
#   exit:   0 when both exist and the binary runs `--version`; non-zero with a message otherwise.
#   cache:  ${TITAN_CACHE_DIR:-$HOME/.cache/titan}/llama-server/<key>/, outside the clone, with
#           <key> = <bundle sha256, 16 hex>-<build flags hash>-<cpu hash>. A valid cache entry is
#           returned without touching the network (well under a second). The first call on a
#           machine builds (about 6 minutes on 2 cores): into <key>.tmp-<pid>, renamed into
#           place at the end, so a killed build never leaves a half cache; a per-key flock makes
#           concurrent callers wait for one build; the compile itself holds
#           /tmp/titan-build.lock, which titan's own builds take too, so one build runs at a time.
#   model:  <key>/models/tiny-<hash of make_test_model.py + vocab>.gguf, made by
#           scripts/make_test_model.py with the bundle's gguf-py and Debian's numpy; byte-identical
#           on every run.
#
# Build choices: Release, static llama/ggml libs, only the llama-server target, no tests or
# examples, no web UI (neither built with npm nor downloaded), no OpenSSL. libcurl is not an
# option any more in this llama.cpp (LLAMA_CURL is deprecated and ignored), so it is not passed.
# GGML_NATIVE=OFF: the binary uses llama.cpp's portable x86-64 baseline (AVX2/FMA/F16C) instead of
# -march=native, so a cache copied to another CPU model still runs, and results (timings,
# temperature-0 text) do not depend on whether the host has AVX-512; the tiny test model does
# not need more. The cpu hash therefore covers the architecture and the baseline's CPU features.
set -euo pipefail

NLC_VERSION=3.21.1                  # node-llama-cpp release whose llama.cpp bundle we build
VOCAB=ggml-vocab-llama-bpe.gguf     # test model's tokenizer: Llama 3 BPE, 128256 tokens
PY=/usr/bin/python3                 # Debian's interpreter (python3-numpy)

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE_ROOT="${TITAN_CACHE_DIR:-$HOME/.cache/titan}/llama-server"

log() { echo "llama-server: $*" >&2; }
die() {
  echo "llama-server: error: $*" >&2
  exit 1
}

usage() {
  cat <<EOF
usage: bash scripts/llama_server.sh [--help]

Builds llama.cpp's llama-server (from npm node-llama-cpp@$NLC_VERSION's source bundle) and a tiny
random-weights llama model once per machine, then prints, for eval:
  LLAMA_SERVER=<path to llama-server>
  TITAN_LLAMA_MODEL=<path to the tiny .gguf>

  eval "\$(bash scripts/llama_server.sh)"
  "\$LLAMA_SERVER" -m "\$TITAN_LLAMA_MODEL" --host 127.0.0.1 --port 18080 --parallel 4 -c 4096

Cache: \${TITAN_CACHE_DIR:-\$HOME/.cache/titan}/llama-server/ (now $CACHE_ROOT).
Delete it to force a rebuild. The first build takes about 6 minutes on 2 cores and needs
npm (registry access or npm's cache), git, cmake, a C++ compiler and $PY with numpy
(bash scripts/bootstrap.sh installs them).
EOF
}

case "${1:-}" in
  -h | --help)
    usage
    exit 0
    ;;
  "") ;;
  *)
    usage >&2
    exit 2
    ;;
esac

sha() { sha256sum | cut -c1-"$1"; }

# The configure flags; their hash (with the compiler's version) is part of the cache key.
CMAKE_FLAGS=(
  -DCMAKE_BUILD_TYPE=Release
  -DBUILD_SHARED_LIBS=OFF
  -DGGML_NATIVE=OFF
  -DGGML_CCACHE=OFF
  -DLLAMA_BUILD_TESTS=OFF
  -DLLAMA_BUILD_EXAMPLES=OFF
  -DLLAMA_BUILD_TOOLS=ON
  -DLLAMA_BUILD_SERVER=ON
  -DLLAMA_BUILD_APP=OFF
  -DLLAMA_BUILD_UI=OFF
  -DLLAMA_USE_PREBUILT_UI=OFF
  -DLLAMA_OPENSSL=OFF
)
GENERATOR=()
if command -v ninja >/dev/null; then GENERATOR=(-G Ninja); fi

command -v c++ >/dev/null || die "no C++ compiler (c++); run: bash scripts/bootstrap.sh"
[ -f "$HERE/make_test_model.py" ] || die "$HERE/make_test_model.py is missing"
flags_hash=$(printf '%s\n' "${CMAKE_FLAGS[@]}" "$(c++ --version | head -n1)" | sha 8)

# CPU: the architecture plus the features the GGML_NATIVE=OFF x86-64 baseline needs.
arch=$(uname -m)
cpu_features=""
if [ "$arch" = x86_64 ]; then
  for f in sse4_2 avx avx2 fma f16c bmi2; do
    grep -qw "$f" /proc/cpuinfo || die "this x86-64 CPU lacks $f, which llama.cpp's portable build needs"
    cpu_features+=" $f"
  done
fi
cpu_hash=$(printf '%s%s\n' "$arch" "$cpu_features" | sha 8)

# node-llama-cpp@X is immutable on npm, so the bundle's hash is remembered per version and the
# cached path is found without running npm.
BUNDLE_SHA_FILE="$CACHE_ROOT/node-llama-cpp-$NLC_VERSION.bundle-sha256"

key_dir() { echo "$CACHE_ROOT/$1-$flags_hash-$cpu_hash"; }

binary_ok() { [ -x "$1/bin/llama-server" ] && "$1/bin/llama-server" --version >/dev/null 2>&1; }

model_path() {
  local dir=$1 h
  [ -f "$dir/share/vocab/$VOCAB" ] || die "$VOCAB is not in $dir/share/vocab; delete $dir"
  h=$(cat "$HERE/make_test_model.py" "$dir/share/vocab/$VOCAB" | sha 16)
  echo "$dir/models/tiny-llama-$h.gguf"
}

emit() {
  printf 'LLAMA_SERVER=%q\n' "$1/bin/llama-server"
  printf 'TITAN_LLAMA_MODEL=%q\n' "$2"
}

# ---- fast path: everything cached ---------------------------------------------------------
if [ -f "$BUNDLE_SHA_FILE" ]; then
  dir=$(key_dir "$(cat "$BUNDLE_SHA_FILE")")
  if binary_ok "$dir"; then
    model=$(model_path "$dir")
    if [ -f "$model" ]; then
      emit "$dir" "$model"
      exit 0
    fi
  fi
fi

# ---- slow path -----------------------------------------------------------------------------
for tool in npm git cmake tar flock sha256sum; do
  command -v "$tool" >/dev/null || die "$tool not found; run: bash scripts/bootstrap.sh"
done
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  die "$PY with numpy is needed for the test model; run: bash scripts/bootstrap.sh"
fi
mkdir -p "$CACHE_ROOT"

DL=$(mktemp -d "${TMPDIR:-/tmp}/titan-llama-npm.XXXXXX")
TMP_BUILD=""
TMP_MODEL=""
cleanup() {
  rm -rf "$DL"
  if [ -n "$TMP_BUILD" ]; then rm -rf "$TMP_BUILD"; fi
  if [ -n "$TMP_MODEL" ]; then rm -f "$TMP_MODEL"; fi
}
trap cleanup EXIT

bundle_sha=""
if [ -f "$BUNDLE_SHA_FILE" ]; then bundle_sha=$(cat "$BUNDLE_SHA_FILE"); fi
dir=""
if [ -n "$bundle_sha" ]; then dir=$(key_dir "$bundle_sha"); fi

fetch_bundle() {
  log "fetching node-llama-cpp@$NLC_VERSION with npm pack"
  (cd "$DL" && npm pack --silent "node-llama-cpp@$NLC_VERSION" >/dev/null) ||
    die "npm pack node-llama-cpp@$NLC_VERSION failed (no registry access and not in npm's cache?)"
  tar -xzf "$DL/node-llama-cpp-$NLC_VERSION.tgz" -C "$DL" package/llama/gitRelease.bundle ||
    die "node-llama-cpp@$NLC_VERSION has no package/llama/gitRelease.bundle"
  BUNDLE="$DL/package/llama/gitRelease.bundle"
  local s
  s=$(sha 16 <"$BUNDLE")
  if [ -n "$bundle_sha" ] && [ "$s" != "$bundle_sha" ]; then
    log "bundle hash changed ($bundle_sha -> $s)"
  fi
  bundle_sha=$s
  dir=$(key_dir "$bundle_sha")
  echo "$bundle_sha" >"$BUNDLE_SHA_FILE.tmp-$$" && mv -f "$BUNDLE_SHA_FILE.tmp-$$" "$BUNDLE_SHA_FILE"
}

if [ -z "$dir" ] || ! binary_ok "$dir"; then fetch_bundle; fi

# One builder per key; the others wait here and then find the result.
exec 9>"$dir.lock"
if ! flock -n 9; then
  log "waiting for another llama_server.sh preparing $(basename "$dir")"
  flock 9
fi

if ! binary_ok "$dir"; then
  [ -n "${BUNDLE:-}" ] || fetch_bundle
  # We hold the key's lock, so any <key>.tmp-* left is from a killed build.
  rm -rf "$dir".tmp-*
  if [ -e "$dir" ]; then
    log "removing broken cache entry $dir"
    rm -rf "$dir"
  fi
  TMP_BUILD="$dir.tmp-$$"
  mkdir -p "$TMP_BUILD"
  git clone --quiet "$BUNDLE" "$TMP_BUILD/src" 2>/dev/null ||
    die "git clone of the bundle failed"
  commit=$(git -C "$TMP_BUILD/src" rev-parse --short=12 HEAD)
  minutes=$((10 / $(nproc) + 1))
  log "building from node-llama-cpp $NLC_VERSION (llama.cpp $commit), about $minutes minutes on $(nproc) cores"
  build_log="$TMP_BUILD/build.log"
  start=$SECONDS
  if ! cmake -S "$TMP_BUILD/src" -B "$TMP_BUILD/build" "${GENERATOR[@]}" "${CMAKE_FLAGS[@]}" \
    >"$build_log" 2>&1; then
    tail -n 40 "$build_log" >&2
    die "cmake configure failed (log above)"
  fi
  log "compiling (waits for /tmp/titan-build.lock while another build holds it); log: $dir.build.log"
  if ! flock /tmp/titan-build.lock nice -n 10 \
    cmake --build "$TMP_BUILD/build" --target llama-server -j"$(nproc)" >>"$build_log" 2>&1; then
    cp "$build_log" "$dir.build.log" || true
    tail -n 40 "$build_log" >&2
    die "build failed (log above, kept in $dir.build.log)"
  fi
  mkdir -p "$TMP_BUILD/bin" "$TMP_BUILD/share/vocab" "$TMP_BUILD/models"
  cp "$TMP_BUILD/build/bin/llama-server" "$TMP_BUILD/bin/"
  cp -r "$TMP_BUILD/src/gguf-py" "$TMP_BUILD/share/"
  cp "$TMP_BUILD"/src/models/ggml-vocab-llama-{bpe,spm}.gguf "$TMP_BUILD/share/vocab/"
  cp "$TMP_BUILD/src/LICENSE" "$TMP_BUILD/share/LICENSE.llama.cpp"
  {
    echo "node-llama-cpp $NLC_VERSION"
    echo "llama.cpp $(git -C "$TMP_BUILD/src" rev-parse HEAD)"
    echo "bundle sha256/16 $bundle_sha"
    printf 'cmake %s\n' "${CMAKE_FLAGS[*]}"
    echo "compiler $(c++ --version | head -n1)"
    echo "built $(date -u +%FT%TZ) in $((SECONDS - start)) s on $(nproc) cores"
  } >"$TMP_BUILD/BUILD_INFO"
  mv "$build_log" "$dir.build.log"
  rm -rf "$TMP_BUILD/src" "$TMP_BUILD/build"
  binary_ok "$TMP_BUILD" || die "the built llama-server does not run --version"
  mv "$TMP_BUILD" "$dir"
  TMP_BUILD=""
  log "built $dir/bin/llama-server in $((SECONDS - start)) s"
fi

model=$(model_path "$dir")
if [ ! -f "$model" ]; then
  log "generating the tiny test model $(basename "$model")"
  TMP_MODEL="$model.tmp-$$"
  "$PY" "$HERE/make_test_model.py" --gguf-py "$dir/share/gguf-py" \
    --vocab "$dir/share/vocab/$VOCAB" --out "$TMP_MODEL" >&2 ||
    die "make_test_model.py failed"
  mv "$TMP_MODEL" "$model"
  TMP_MODEL=""
fi

emit "$dir" "$model"
