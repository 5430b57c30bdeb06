#!/usr/bin/env bash
# Fails when any C++ file differs from clang-format (Google base, .clang-format).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files -co --exclude-standard '*.cc' '*.h')
[ ${#files[@]} -eq 0 ] && exit 0
if ! clang-format --dry-run -Werror "${files[@]}" 2>/tmp/titan-format.log; then
  head -40 /tmp/titan-format.log
  echo "clang-format: files above differ; run: clang-format -i \$(git ls-files '*.cc' '*.h')"
  exit 1
fi
echo "clang-format: ${#files[@]} files clean"
