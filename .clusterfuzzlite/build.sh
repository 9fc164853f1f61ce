#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz build script: builds every fuzz/<name>_fuzzer.c
# with the engine's variables and puts into $OUT, for each target:
#   <name>                   the fuzzer ($CC $CFLAGS, linked with $LIB_FUZZING_ENGINE)
#   <name>_seed_corpus.zip   fuzz/corpus/<name>/ (flat zip)
#   <name>.dict              fuzz/dict/<name>.dict
#   <name>.options           fuzz/options/<name>.options, where there is one
# plus lib/: the shared libraries the targets need that the runner image
# lacks (libcjson, libmicrohttpd, libcurl, libseccomp and theirs), found by
# the targets' RPATH $ORIGIN/lib (DT_RPATH, not RUNPATH: it also serves the
# libraries' own dependencies).
# Inputs: CC, CFLAGS, LIB_FUZZING_ENGINE, OUT, WORK (scratch; default
# $OUT/../work), SBX_WERROR (ON: warnings are errors), SRC (unused: the
# source tree is the current directory, as the Dockerfile's WORKDIR).
# ci/cflite_test.sh (ctest cflite_build_sh, ci/test's fuzz stage) runs this
# script locally.
: "${CC:?}" "${CFLAGS:?}" "${LIB_FUZZING_ENGINE:?}" "${OUT:?}"
src=$PWD
[ -f "$src/fuzz/CMakeLists.txt" ] || { echo "build.sh: run from the sbx-harness source tree" >&2; exit 1; }
work=${WORK:-$OUT/../work}/sbx-build
jobs=${SBX_BUILD_JOBS:-$(nproc)}

names=()
for f in "$src"/fuzz/*_fuzzer.c; do
  names+=("$(basename "$f" _fuzzer.c)")
done
[ ${#names[@]} -gt 0 ] || { echo "build.sh: no fuzz/*_fuzzer.c" >&2; exit 1; }

# $CC and $CFLAGS are passed explicitly, so a kept build dir (WORK) follows
# a change of either. -Werror off unless SBX_WERROR=ON (ci/test's fuzz
# stage): the image's clang may be newer than the one the project is checked
# with. No SBX_FUZZ flags: the sanitizer comes from $CFLAGS (address,
# undefined, memory, coverage).
cmake -S "$src" -B "$work" -G "Unix Makefiles" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE= \
  -DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="$CFLAGS" \
  -DSBX_LIB_FUZZING_ENGINE="$LIB_FUZZING_ENGINE" \
  -DSBX_WERROR="${SBX_WERROR:-OFF}" -DSBX_SDK_TESTS=OFF -DBUILD_TESTING=OFF \
  -DCMAKE_BUILD_RPATH='$ORIGIN/lib' -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags >/dev/null
cmake --build "$work" --parallel "$jobs" --target fuzzers

mkdir -p "$OUT/lib"
for n in "${names[@]}"; do
  cp "$work/fuzz/$n" "$OUT/$n"
  if [ -f "$src/fuzz/options/$n.options" ]; then cp "$src/fuzz/options/$n.options" "$OUT/$n.options"; fi
  python3 - "$src/fuzz/corpus/$n" "$OUT/${n}_seed_corpus.zip" <<'PY'
import os, sys, zipfile
corpus, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
    for name in sorted(os.listdir(corpus)):
        path = os.path.join(corpus, name)
        if os.path.isfile(path):
            z.write(path, arcname=name)
PY
  if [ -f "$src/fuzz/dict/$n.dict" ]; then cp "$src/fuzz/dict/$n.dict" "$OUT/$n.dict"; fi
  # Shared libraries outside glibc and the compiler runtime go to $OUT/lib.
  ldd "$OUT/$n" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libgcc_s.so*|libstdc++.so*|libresolv.so*|libutil.so*) ;;
      *) cp -L -n "$lib" "$OUT/lib/" ;;
    esac
  done
done
echo "build.sh: built ${#names[@]} targets into $OUT: ${names[*]}"
