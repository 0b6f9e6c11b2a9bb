#!/usr/bin/env bash
# Runs the atheris fuzz targets in fuzz/ for a bounded time each.
#
#   bash tools/fuzz.sh [seconds per target]      (default: $FUZZ_TIME, else 60)
#
# Targets: fuzz/atheris_escape.py (the C htmltext twin against the Python
# one) and fuzz/atheris_compiler.py (the PTL compiler on arbitrary source).
# The C accelerator is compiled with clang, -fsanitize=address and libFuzzer
# coverage, into a copy of the package in a temporary directory, and the
# targets run with atheris's ASan runtime preloaded, so libFuzzer is guided by
# the C code's branches too and memory errors are caught where they happen.
#
# Installs atheris into the venv when it is missing (it builds against clang
# and libFuzzer: apt-get install -y clang libclang-rt-14-dev).  Corpora are
# kept in test-artifacts/fuzz/ between runs; a crash or finding is written
# there too, and the script exits non-zero.
#
# Environment: PYTHON (default .venv/bin/python), FUZZ_TIME, FUZZ_OUT.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
SECONDS_PER_TARGET=${1:-${FUZZ_TIME:-60}}
OUT=${FUZZ_OUT:-$ROOT/test-artifacts/fuzz}

if ! command -v clang >/dev/null; then
    echo "fuzz: clang not found; apt-get install -y clang libclang-rt-14-dev" >&2
    exit 2
fi
if ! "$PYTHON" -c "import atheris" 2>/dev/null; then
    echo "fuzz: installing atheris into $("$PYTHON" -c 'import sys; print(sys.prefix)')"
    if ! CC=clang CXX=clang++ "$PYTHON" -m pip install --quiet atheris; then
        echo "fuzz: atheris did not build; it needs clang and libFuzzer" \
            "(apt-get install -y clang libclang-rt-14-dev)" >&2
        exit 2
    fi
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ptl-fuzz.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
pyconfig() { "$PYTHON" -c "import sysconfig; print(sysconfig.$1)"; }

mkdir "$WORK/site"
cp -r "$ROOT/ptl_wsgi" "$WORK/site/ptl_wsgi"
find "$WORK/site/ptl_wsgi" \( -name '*.so' -o -name '*.pyd' -o -name __pycache__ \) -prune \
    -exec rm -rf {} +
EXTENSION="$WORK/site/ptl_wsgi/_htmltext_c$(pyconfig 'get_config_var("EXT_SUFFIX")')"
echo "fuzz: building $EXTENSION with ASan and libFuzzer coverage"
clang -shared -fPIC -g -O1 -fno-omit-frame-pointer -fsanitize=address,fuzzer-no-link \
    -I"$(pyconfig 'get_paths()["include"]')" "$ROOT/ptl_wsgi/_htmltext_c.c" -o "$EXTENSION"

# -S keeps the venv's editable install (a .pth import hook) from shadowing the
# instrumented copy; PYTHONPATH then names the copy first, site-packages second.
export PYTHONPATH="$WORK/site:$(pyconfig 'get_paths()["purelib"]')"
export LD_PRELOAD="$("$PYTHON" -c 'import atheris; print(atheris.path())')/asan_with_fuzzer.so"
# Python frees little at exit, so leak reports would be noise; every object
# allocation goes through malloc, so ASan sees the accelerator's.
export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1
export PYTHONMALLOC=malloc

cd "$WORK"  # not the checkout, whose ptl_wsgi would come first on sys.path
loaded=$("$PYTHON" -S -c "import ptl_wsgi._htmltext_c as c; print(c.__file__)")
if [[ $loaded != "$WORK"/* ]]; then
    echo "fuzz: imported the wrong accelerator: $loaded" >&2
    exit 2
fi

mkdir -p "$OUT/corpus-escape" "$OUT/corpus-compiler" "$WORK/seeds-compiler"
find "$ROOT/tests" "$ROOT/example_sites" -name '*.ptl' -exec cp {} "$WORK/seeds-compiler/" \;

status=0
# run NAME ENV... -- LIBFUZZER-ARGS...
run() {
    local name=$1
    shift
    local env=()
    while [[ $1 != -- ]]; do env+=("$1"); shift; done
    shift
    echo "fuzz: $name for ${SECONDS_PER_TARGET}s"
    if ! env "${env[@]}" "$PYTHON" -S "$ROOT/fuzz/atheris_$name.py" \
        -max_total_time="$SECONDS_PER_TARGET" \
        -rss_limit_mb=4096 -timeout=20 -print_final_stats=1 \
        -artifact_prefix="$OUT/$name-" "$@" >"$OUT/$name.log" 2>&1; then
        echo "fuzz: $name FOUND A PROBLEM; see $OUT/$name.log and $OUT/$name-*" >&2
        tail -n 40 "$OUT/$name.log" >&2
        status=1
    else
        grep -E '^Done|stat::number_of_executed_units' "$OUT/$name.log" | head -n 2
    fi
}
run escape -- "$OUT/corpus-escape"
# The compiler is pure Python: without ASan and malloc it runs ten times faster.
run compiler -u LD_PRELOAD -u PYTHONMALLOC PTL_WSGI_PURE_PYTHON=1 -- \
    -dict="$ROOT/fuzz/ptl.dict" "$OUT/corpus-compiler" "$WORK/seeds-compiler"
exit $status
