#!/bin/bash
# bench/run_multimap.sh - on a GPU host: build and run the static multimap
# microbenchmark and write its markdown (GPU name, date, commit, tables) to
# stdout, and to $OUT/multimap.md when OUT is set.
# Usage: bench/run_multimap.sh [commit] [extra multimap_bench options]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
commit=${1:-$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)}
shift || true
# A binary built elsewhere (same x86-64, CUDA 13) may be carried in; else build.
if [ ! -x "$here/multimap_bench" ] || ! "$here/multimap_bench" --help >/dev/null 2>&1 </dev/null; then
  make -C "$here" -s multimap_bench
fi
out=${OUT:+$OUT/multimap.md}
"$here/multimap_bench" --commit "$commit" "$@" | tee ${out:-/dev/null}
