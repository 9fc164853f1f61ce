#!/bin/sh
# Builds the sbx-cell of a git revision (default: the commit before the
# writable root, issue 25) into DIR (default /tmp/sbx-cell-baseline), for
# bench-rootfs -b DIR/mock-api/sbx-cell. Only the sbx-cell target is built.
# usage: bench/cell_baseline.sh [REV] [DIR]
set -eu
rev=${1:-33df1c2^}
dir=${2:-/tmp/sbx-cell-baseline}
top=$(git rev-parse --show-toplevel)
src=$dir/src
rm -rf "$dir"
mkdir -p "$src"
git -C "$top" archive "$rev" | tar -x -C "$src"
cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$dir" --target sbx-cell -j2 >/dev/null
echo "$dir/mock-api/sbx-cell"
