"""Markup formatted at run time: ``htmltext % args``, ``.format()``, ``.format_map()``.

Since run-time formatting is contextual (docs/contextual-escaping.md, "Formatting at
run time"), a format is planned once and each value outside text gets its context's
escaper.  A format whose values all land in text or a quoted plain attribute must
cost about what it cost before (the budget is 1.3x); this script measures that
against another checkout (``--base``, e.g. ``git worktree add /tmp/before REV`` with
its C twin built there), by callgrind instructions per call (repeatable on a shared
machine) for both twins::

    .venv/bin/python benchmarks/formatting.py --base /tmp/before [--calls 2000]

Rows marked "outside text" show what a value in a URL costs now (the base escapes it
for HTML only, which is wrong there, so that ratio is a price, not a regression).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from _results import instructions_per_call  # noqa: E402

#: name -> (format, the arguments' expression, whether a value lands outside text)
CASES: dict[str, tuple[str, str, bool]] = {
    "% one value": ("<p>%s</p>", '"a<b"', False),
    "% tuple, attribute": ('<a title="%s">%s</a>', '("t\'", "x&y")', False),
    "% mapping, %d": ("<b>%(name)s</b> %(n)d", '{"name": "<N>", "n": 7}', False),
    "format()": ("<p>{} <b>{name}</b></p>", '"a", name="<b>"', False),
    "format_map()": ("<p>{a} <b>{b}</b></p>", '{"a": "x", "b": "<y>"}', False),
    "% href (outside text)": ('<a href="%s">%s</a>', '("/a b?x=1&y=2", "x&y")', True),
}

CHILD = """\
import sys
root, twin, name, calls = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sys.path.insert(0, root)
from ptl_wsgi.html import implementation
fmt = implementation(twin).htmltext({fmt!r})
def once():
    return {call}
for _ in range(50):
    once()  # caches filled, modules imported
for _ in range(calls):
    once()
"""


def _call(fmt: str, args: str) -> str:
    if fmt.startswith("<p>{a}"):
        return f"fmt.format_map({args})"
    if "{" in fmt:
        return f"fmt.format({args})"
    return f"fmt % {args}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the checkout to compare with")
    parser.add_argument("--calls", type=int, default=2000)
    options = parser.parse_args()
    print("| format | twin | base | now | ratio |")
    print("| --- | --- | ---: | ---: | ---: |")
    folder = tempfile.TemporaryDirectory()
    for number, (name, (fmt, args, _)) in enumerate(CASES.items()):
        script = Path(folder.name) / f"case{number}.py"
        script.write_text(CHILD.format(fmt=fmt, call=_call(fmt, args)))
        for twin in ("c", "python"):
            counts = [
                instructions_per_call([str(script), str(root), twin, name], options.calls)
                for root in (options.base, ROOT)
            ]
            print(
                f"| `{name}` | {twin} | {counts[0]:,.0f} | {counts[1]:,.0f} "
                f"| {counts[1] / counts[0]:.2f}x |",
                flush=True,
            )


if __name__ == "__main__":
    main()
