"""atheris target: the C htmltext twin against the pure-Python reference.

Each input is decoded into a few operations (escaping, ``%`` and ``format``
with fuzzed format strings, f-string fields with fuzzed specs, joins,
TemplateIO, concatenation, str methods) on fuzzed text; every operation runs
on both twins and must give the same text, the same result type, or the
same exception type.  A crash of the C code, an AddressSanitizer report
(see tools/fuzz.sh) or a difference is a finding.

    python fuzz/atheris_escape.py -max_total_time=60 [corpus_dir]
"""

from __future__ import annotations

import re
import sys
from typing import Any

import atheris

with atheris.instrument_imports():
    from ptl_wsgi import html

PY = html.implementation("python")
C = html.implementation("c")

# Widths and precisions this long would only measure how fast memory fills.
_HUGE_NUMBER = re.compile(r"\d{4,}")


class Markup:
    """A foreign markup object (the __html__ protocol), as markupsafe's Markup is."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __html__(self) -> str:
        return self.text

    def __repr__(self) -> str:  # also its str(): the same for both twins' arguments
        return f"Markup({self.text!r})"


def value(twin: Any, kind: int, text: str, number: int) -> Any:
    """One argument, built the same way for either twin."""
    return [
        lambda: text,
        lambda: twin.htmltext(text),
        lambda: Markup(text),
        lambda: number,
        lambda: number / 7,
        lambda: None,
        lambda: [text, number],
    ][kind % 7]()


def operations(twin: Any, text: str, fmt: str, args: list[Any]) -> list[Any]:
    h = twin.htmltext
    out = twin.TemplateIO(html=True)
    for arg in args:
        out += arg
    return [
        lambda: twin.htmlescape(text),
        lambda: twin.escape_str(text),
        lambda: twin.module.markup_of(args[0]),
        lambda: h(fmt) % tuple(args),
        lambda: h(fmt) % args[0],
        lambda: h(fmt) % {"a": args[0], "b": args[-1]},
        lambda: h(fmt).format(*args, a=args[0]),
        lambda: h(fmt).format_map({"a": args[0]}),
        lambda: twin.format_field(args[0], -1, fmt),
        lambda: twin.format_field(args[0], ord("r"), fmt),
        lambda: twin.html_join(args),
        lambda: twin.plain_join(args),
        lambda: out.getvalue(),
        lambda: h(text).join(args),
        lambda: h(text) + args[0],
        lambda: args[0] + h(text),
        lambda: h(text) * (len(fmt) % 4),
        lambda: h(text).replace(fmt, args[0]) if isinstance(args[0], str) else None,
        lambda: h(text).split(fmt or None),
        lambda: twin.stringify(args[0]),
    ]


def outcome(operation: Any, twin: Any) -> tuple[str, str]:
    try:
        result = operation()
    except RecursionError:
        raise
    except Exception as exc:  # the twins must agree on the error, not on its message
        return ("error", type(exc).__name__)
    if isinstance(result, list):
        return ("list", repr([(type(x) is twin.htmltext, str(x)) for x in result]))
    kind = "htmltext" if isinstance(result, twin.htmltext) else type(result).__name__
    return (kind, str(result))


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    text = fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 64))
    fmt = fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 32))
    if _HUGE_NUMBER.search(fmt):
        return
    number = fdp.ConsumeIntInRange(-9999, 9999)
    kinds = [fdp.ConsumeIntInRange(0, 6) for _ in range(fdp.ConsumeIntInRange(1, 4))]
    texts = [fdp.ConsumeUnicodeNoSurrogates(16) for _ in kinds]
    chosen = [fdp.ConsumeIntInRange(0, 19) for _ in range(3)]
    python_args = [value(PY, k, t, number) for k, t in zip(kinds, texts, strict=True)]
    c_args = [value(C, k, t, number) for k, t in zip(kinds, texts, strict=True)]
    python_ops = operations(PY, text, fmt, python_args)
    c_ops = operations(C, text, fmt, c_args)
    for index in chosen:
        expected = outcome(python_ops[index], PY)
        got = outcome(c_ops[index], C)
        if got != expected:
            raise AssertionError(
                f"twins differ on operation {index} with text={text!r} fmt={fmt!r} "
                f"args={python_args!r}:\n  python: {expected!r}\n  c:      {got!r}"
            )


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
