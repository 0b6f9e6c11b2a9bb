"""The template styles compiled from .ptl, against the same module converted to plain Python.

Run from the repository root, on Python 3.14+ (the converted module has t-strings)::

    .venv/bin/python benchmarks/converted.py [--rounds N] [--write]

benchmarks/tpl/ptl_styles.ptl (bigtable and page, in four styles: statements,
f-strings, ``%`` and ``.format()``) is compiled as ``.ptl`` and converted by
``ptl-wsgi convert --to-py``'s function; every function's output is checked to
be the same both ways before anything is timed.  Rounds are interleaved and
each figure is the median of its rounds.  ``--write`` puts the table in
RESULTS.md.  No target: the figures say what the plain-Python form costs.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _results import interleaved, write_section  # noqa: E402
from templates import ITEMS, TABLE  # noqa: E402

STYLES = ("stmt", "f", "pct", "format")
SCENARIOS = ("bigtable", "page")
SECTION = "## Templates converted to plain Python"
SOURCE = HERE / "tpl" / "ptl_styles.ptl"


def functions() -> dict[str, Callable[[], Any]]:
    import ptl_wsgi
    from ptl_wsgi.tools.to_py import to_python

    compiled: dict[str, Any] = {"__name__": "bench_styles"}
    exec(ptl_wsgi.compile_ptl(SOURCE.read_text(), str(SOURCE)), compiled)
    folder = Path(tempfile.mkdtemp(prefix="ptl-converted-"))
    path = folder / "ptl_styles_py.py"
    path.write_text(to_python(SOURCE.read_bytes(), str(SOURCE)).source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("ptl_styles_py", path)
    assert spec is not None and spec.loader is not None
    converted = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(converted)
    found: dict[str, Callable[[], Any]] = {}
    for scenario, argument in (("bigtable", TABLE), ("page", ITEMS)):
        for style in STYLES:
            name = f"{scenario}_{style}"
            ptl, py = compiled[name], getattr(converted, name)
            if str(ptl(argument)) != str(py(argument)):
                raise SystemExit(f"{name} renders differently converted")
            found[f"{scenario} {style} .ptl"] = lambda f=ptl, a=argument: f(a)
            found[f"{scenario} {style} .py"] = lambda f=py, a=argument: f(a)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.2, help="per call and round")
    parser.add_argument("--write", action="store_true", help="put the table in RESULTS.md")
    args = parser.parse_args()
    if sys.version_info < (3, 14):
        raise SystemExit("converted modules use t-strings: run this on Python 3.14+")
    calls = functions()
    gc.collect()
    rounds = interleaved(calls, args.rounds, args.seconds)
    times = {name: statistics.median(values) for name, values in rounds.items()}
    lines = [
        "| scenario | style | compiled .ptl | converted .py | .py / .ptl |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for scenario in SCENARIOS:
        for style in STYLES:
            ptl, py = times[f"{scenario} {style} .ptl"], times[f"{scenario} {style} .py"]
            figures = f"{ptl * 1e3:.3f} ms | {py * 1e3:.3f} ms | {py / ptl:.2f}x"
            lines.append(f"| {scenario} | {style} | {figures} |")
    print("\n".join(lines))
    if args.write:
        import ptl_wsgi

        rounds_option = f" --rounds {args.rounds}" if args.rounds != 5 else ""
        command = f"python benchmarks/converted.py{rounds_option} --write"
        write_section(
            SECTION,
            [
                SECTION,
                "",
                f"`{command}` (Python {sys.version.split()[0]}, ptl_wsgi {ptl_wsgi.__version__}, "
                f"{ptl_wsgi.IMPLEMENTATION} twin; medians of interleaved rounds). The styles of "
                "benchmarks/tpl/ptl_styles.ptl compiled, and converted by `ptl-wsgi convert "
                "--to-py`: the converted functions build `htmltext(...)` literals and "
                '`htmlformat(t"...")` on every call and append statement by statement, where '
                "the compiler hoists literals and joins statements into one call.",
                "",
                *lines,
            ],
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
