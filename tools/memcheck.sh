#!/usr/bin/env bash
# Runs the htmltext tests against an AddressSanitizer build of the C accelerator.
#
#   bash tools/memcheck.sh [extra pytest arguments]
#
# The accelerator is compiled with -fsanitize=address into a copy of the
# package in a temporary directory; the tests then run with libasan preloaded
# (the interpreter itself is not instrumented) and PYTHONMALLOC=malloc, so that
# every object allocation goes through ASan.
#
# Fails (non-zero) on: a test failure; any AddressSanitizer error (overflow,
# use after free, double free...); a leak whose allocation stack passes
# through the accelerator.  Leaks that LeakSanitizer finds in the interpreter
# itself are ignored.  Leaked references (an object kept alive by a missing
# Py_DECREF) are caught by tests/htmltext/test_c_accelerator.py::test_no_leaks_per_operation.
#
# Environment: PYTHON (default .venv/bin/python), CC (default gcc).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
CC=${CC:-gcc}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ptl-memcheck.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

pyconfig() { "$PYTHON" -c "import sysconfig; print(sysconfig.$1)"; }

LIBASAN=$("$CC" -print-file-name=libasan.so)
if [[ ! -e $LIBASAN ]]; then
    echo "memcheck: $CC has no AddressSanitizer runtime (libasan.so)" >&2
    exit 2
fi

mkdir "$WORK/site"
cp -r "$ROOT/ptl_wsgi" "$WORK/site/ptl_wsgi"
find "$WORK/site/ptl_wsgi" \( -name '*.so' -o -name '*.pyd' -o -name __pycache__ \) -prune \
    -exec rm -rf {} +
EXTENSION="$WORK/site/ptl_wsgi/_htmltext_c$(pyconfig 'get_config_var("EXT_SUFFIX")')"
echo "memcheck: building $EXTENSION"
"$CC" -shared -fPIC -g -O1 -fno-omit-frame-pointer -fsanitize=address \
    -Wall -Wextra -Werror -I"$(pyconfig 'get_paths()["include"]')" \
    "$ROOT/ptl_wsgi/_htmltext_c.c" -o "$EXTENSION"

# The checkout must be on sys.path, as with "python -m pytest" (the tests
# import tests.*), so import the instrumented copy first and check it is the
# one in use.  The exit status goes to a file because LeakSanitizer replaces
# the process's own when it reports leaks.
cat > "$WORK/run.py" <<'EOF'
import os
import sys

import ptl_wsgi._htmltext_c as accelerator
import pytest

work, status_file = sys.argv[1:3]
if not accelerator.__file__.startswith(work):
    sys.exit(f"memcheck: imported the wrong accelerator: {accelerator.__file__}")
sys.path.insert(0, os.getcwd())
status = pytest.main(sys.argv[3:])
with open(status_file, "w") as f:
    f.write(f"{int(status)}\n")
sys.exit(status)
EOF

echo "memcheck: running the tests under AddressSanitizer"
cd "$ROOT"
set +e
env PYTHONPATH="$WORK/site" PYTHONMALLOC=malloc PTL_WSGI_REQUIRE_C=1 PTL_WSGI_PURE_PYTHON= \
    LD_PRELOAD="$LIBASAN" \
    ASAN_OPTIONS="detect_leaks=1:log_path=$WORK/asan:fast_unwind_on_malloc=0:malloc_context_size=8" \
    "$PYTHON" "$WORK/run.py" "$WORK" "$WORK/status" -p no:cacheprovider -q -m "not slow" \
    tests/htmltext/test_htmltext.py tests/htmltext/test_htmltext_differential.py tests/htmltext/test_c_accelerator.py \
    tests/htmltext/test_htmlformat.py tests/compiler/test_compiled_output_fast_path.py tests/compiler/test_loop_fusion.py \
    tests/compiler/test_loop_fusion_attack_findings.py tests/escaping/test_contextual_twins.py \
    tests/htmltext/test_tstrings.py tests/htmltext/test_tstring_items.py \
    tests/htmltext/test_tstring_twins_nested.py tests/htmltext/test_htmlformat_fast_path.py \
    tests/compiler/test_loop_fusion_reads.py "$@"
set -e

failed=0
if [[ $(cat "$WORK/status" 2>/dev/null) != 0 ]]; then
    echo "memcheck: FAILED: the tests failed or the interpreter died" >&2
    failed=1
fi
shopt -s nullglob
for log in "$WORK"/asan.*; do
    if grep -q "ERROR: AddressSanitizer" "$log"; then
        cat "$log" >&2
        echo "memcheck: FAILED: AddressSanitizer error (report above)" >&2
        failed=1
    fi
    # A LeakSanitizer report is a paragraph per leak: keep those allocated
    # from inside the accelerator, except tracemalloc's own bookkeeping
    # (made while it traces an allocation of ours).
    ours=$(awk -v RS= '/(Direct|Indirect) leak/ && /_htmltext_c/ && !/tracemalloc_add_trace/' "$log")
    if [[ -n $ours ]]; then
        printf '%s\n' "$ours" >&2
        echo "memcheck: FAILED: memory leaked by the accelerator (stacks above)" >&2
        failed=1
    fi
done
if ((failed == 0)); then
    echo "memcheck: OK (no test failures, no AddressSanitizer errors, no leaks in the accelerator)"
fi
exit "$failed"
