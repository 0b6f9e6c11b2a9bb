"""atheris target: the PTL compiler on arbitrary source.

Every input is compiled twice, as bytes (so encoding declarations and
undecodable bytes are exercised) and as text.  Compiling must succeed or
raise SyntaxError with the file name and a line number; any other exception
is a finding.  What compiles is not run: templates may loop forever.

    python fuzz/atheris_compiler.py -max_total_time=60 -dict=fuzz/ptl.dict [corpus_dir]

tools/fuzz.sh seeds the corpus with the .ptl files of the repository.
"""

from __future__ import annotations

import sys
import warnings

import atheris

with atheris.instrument_imports():
    from ptl_wsgi import compiler

FILENAME = "<fuzz>"


def check(source: str | bytes) -> None:
    try:
        compiler.compile_ptl(source, FILENAME)
    except SyntaxError as exc:
        if exc.filename != FILENAME or not isinstance(exc.lineno, int) or exc.lineno < 1:
            raise AssertionError(
                f"SyntaxError without a location (file {exc.filename!r}, line {exc.lineno!r}) "
                f"for {source!r}"
            ) from exc


def test_one_input(data: bytes) -> None:
    check(data)
    check(data.decode("utf-8", "replace"))


def main() -> None:
    warnings.simplefilter("ignore", SyntaxWarning)  # CPython's, about odd literals
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
