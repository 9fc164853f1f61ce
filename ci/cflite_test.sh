#!/usr/bin/env bash
# ctest cflite_build_sh, and the build of ci/test's fuzz stage: runs
# .clusterfuzzlite/build.sh as OSS-Fuzz / ClusterFuzzLite would (CC, CFLAGS,
# LIB_FUZZING_ENGINE, OUT, SRC, WORK set; Debian's clang and libFuzzer
# instead of the base-builder image), then checks for every
# fuzz/<name>_fuzzer.c: the executable <name>, <name>_seed_corpus.zip holding
# exactly fuzz/corpus/<name>/, <name>.dict equal to fuzz/dict/<name>.dict, an
# RPATH of $ORIGIN/lib with the non-glibc libraries in $OUT/lib, and that the
# target, with only $OUT/lib for its libraries, runs the first seed of its
# unzipped corpus (the fuzz stage replays every corpus with these binaries
# next, and ctest's fuzz_replay_* in every build).
# Environment: SBX_CFLITE_DIR (unset: a scratch dir, removed at exit; set:
# $OUT is DIR/out and the CMake build DIR/work, both kept, so the fuzz stage
# runs the targets checked here and a second run rebuilds only what changed),
# SBX_CFLITE_UBSAN=1 (UBSan beside ASan, findings fatal, as the fuzz stage
# wants), SBX_WERROR (passed to build.sh; default OFF, as on the image).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cc=${SBX_CFLITE_CC:-clang}
if [ -n "${SBX_CFLITE_DIR:-}" ]; then
  mkdir -p "$SBX_CFLITE_DIR"
  dir=$(cd "$SBX_CFLITE_DIR" && pwd)
  # $OUT holds this build's files only (a removed target must not linger);
  # the checks' scratch is per run; the CMake build dir is kept
  rm -rf "$dir/out" "$dir/src" "$dir"/corpus-* "$dir"/run-*
else
  dir=$(mktemp -d "${TMPDIR:-/tmp}/sbx-cflite.XXXXXX")
  trap 'rm -rf "$dir"' EXIT
fi
mkdir -p "$dir/out" "$dir/work" "$dir/src"
cflags="-O1 -fno-omit-frame-pointer -gline-tables-only -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -fsanitize=address -fsanitize-address-use-after-scope -fsanitize=fuzzer-no-link"
[ "${SBX_CFLITE_UBSAN:-}" != 1 ] || cflags+=" -fsanitize=undefined -fno-sanitize-recover=undefined"
fail=0
bad() { echo "cflite: FAIL: $*"; fail=1; }

echo "cflite: build.sh into $dir/out"
( cd "$src" && env CC="$cc" CXX="${cc/clang/clang++}" \
    CFLAGS="$cflags" SBX_WERROR="${SBX_WERROR:-OFF}" \
    LIB_FUZZING_ENGINE="-fsanitize=fuzzer" SANITIZER=address FUZZING_ENGINE=libfuzzer \
    OUT="$dir/out" SRC="$dir/src" WORK="$dir/work" SBX_BUILD_JOBS="${SBX_BUILD_JOBS:-2}" \
    bash .clusterfuzzlite/build.sh ) > "$dir/build.log" 2>&1 || { tail -n 40 "$dir/build.log"; echo "cflite: FAIL: build.sh exited non-zero"; exit 1; }
tail -n 1 "$dir/build.log"

n=0
for f in "$src"/fuzz/*_fuzzer.c; do
  name=$(basename "$f" _fuzzer.c); n=$((n + 1))
  bin=$dir/out/$name
  [ -x "$bin" ] || { bad "$name: no executable \$OUT/$name"; continue; }
  python3 - "$dir/out/${name}_seed_corpus.zip" "$src/fuzz/corpus/$name" "$dir/corpus-$name" <<'PY' || bad "$name: seed corpus zip"
import os, sys, zipfile
zpath, corpus, dest = sys.argv[1:]
if not os.path.isfile(zpath):
    sys.exit("missing %s" % zpath)
with zipfile.ZipFile(zpath) as z:
    bad = z.testzip()
    if bad:
        sys.exit("corrupt member %s" % bad)
    names = sorted(z.namelist())
    want = sorted(n for n in os.listdir(corpus) if os.path.isfile(os.path.join(corpus, n)))
    if names != want:
        sys.exit("zip holds %d files, corpus %d (first difference: %s)" % (
            len(names), len(want), sorted(set(names) ^ set(want))[:3]))
    for n in names:
        if z.read(n) != open(os.path.join(corpus, n), "rb").read():
            sys.exit("%s differs from the corpus file" % n)
    z.extractall(dest)
print("%s: %d seeds" % (os.path.basename(zpath), len(names)))
PY
  cmp -s "$dir/out/$name.dict" "$src/fuzz/dict/$name.dict" || bad "$name: \$OUT/$name.dict missing or not fuzz/dict/$name.dict"
  readelf -d "$bin" | grep -Eq '\(RPATH\).*\$ORIGIN/lib' || bad "$name: no RPATH \$ORIGIN/lib"
  if ldd "$bin" | grep -q 'not found'; then bad "$name: unresolved libraries: $(ldd "$bin" | grep 'not found')"; fi
  # Libraries resolve from $OUT/lib (as on the runner image), not the system.
  while read -r lib path; do
    case "$lib" in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libgcc_s.so*|libstdc++.so*|libresolv.so*|libutil.so*) ;;
      *) [[ "$path" == "$dir/out/lib/"* ]] || bad "$name: $lib resolves to $path, not \$OUT/lib" ;;
    esac
  done < <(env -u LD_LIBRARY_PATH ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
  mkdir -p "$dir/run-$name"
  # sed, not head: head would quit early, and under pipefail the SIGPIPE this
  # gives sort would fail the assignment (and set -e the script)
  seed=$(find "$dir/corpus-$name" -maxdepth 1 -type f | LC_ALL=C sort | sed -n 1p)
  [ -n "$seed" ] || { bad "$name: an empty seed corpus"; continue; }
  if ! (cd "$dir/run-$name" && env -u LD_LIBRARY_PATH UBSAN_OPTIONS=halt_on_error=1 \
        "$bin" "$seed") > "$dir/run-$name.log" 2>&1; then
    tail -n 20 "$dir/run-$name.log"; bad "$name: running its first seed ($(basename "$seed")) failed"
  elif ! grep -q "^Executed .* in [0-9]* ms" "$dir/run-$name.log"; then
    tail -n 20 "$dir/run-$name.log"; bad "$name: no 'Executed' line for its first seed"
  else
    echo "cflite: $name: $(grep -Eo '^Executed .* in [0-9]+ ms' "$dir/run-$name.log" | sed "s|$dir/corpus-$name/||")"
  fi
done
[ "$n" -gt 0 ] || bad "no fuzz targets"
extra=$(cd "$dir/out" && ls | grep -Ev '^(lib|.*_seed_corpus\.zip|.*\.dict|.*\.options)$' | wc -l)
for o in "$dir/out"/*.options; do # an options file belongs to a target and is an ini libFuzzer section
  [ -e "$o" ] || continue
  [ -x "$dir/out/$(basename "$o" .options)" ] || bad "$(basename "$o") names no target"
  grep -qx '\[libfuzzer\]' "$o" || bad "$(basename "$o") has no [libfuzzer] section"
done
[ "$extra" -eq "$n" ] || bad "\$OUT has $extra executables, fuzz/ has $n targets"
[ $fail = 0 ] || exit 1
echo "cflite: $n targets, seed corpora and dictionaries OK"
