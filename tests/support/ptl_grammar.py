"""A small grammar of PTL for the compiler fuzz tests, and the child's crash check.

A helper module, not a test module: tests/compiler/test_fuzz_compiler.py draws sources
from it, and the child process it starts imports :func:`compile_and_run` from
here, so no test module is ever imported under a second name.
"""

from __future__ import annotations

import os
import re
import warnings
from types import CodeType
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptl_wsgi import compiler

FILENAME = "<fuzz>"


# -- the grammar -------------------------------------------------------------------------

names = st.sampled_from(["a", "b", "item", "title", "_x", "été", "n"])
tricky_text = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters="\x00")
    | st.sampled_from(list("'\"{}\\%<>&\n\t\r[]()#:")),
    max_size=10,
)


def _fstring_part(text: str) -> str:
    return (
        text.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("{", "{{")
        .replace("}", "}}")
        .replace("\n", "\\n")
        .replace("\r", "\\r")
    )


def _choose(draw: st.DrawFn, forms: list[Any]) -> Any:
    """Draw one of *forms* (callables) and build only that one."""
    return draw(st.sampled_from(forms))()


@st.composite
def string_literal(draw: st.DrawFn, allow_bytes: bool = True) -> str:
    text = draw(tricky_text)

    def fstring() -> str:
        field = draw(names)
        spec = draw(st.sampled_from(["", "!r", "!s", "!a", ":>6", ":^4", "!r:>8", ":{3}", "="]))
        after = _fstring_part(draw(tricky_text))
        return f'f"{_fstring_part(text)}{{{field}{spec}}}{after}"'

    forms = [
        lambda: repr(text),
        lambda: "u" + repr(text),
        lambda: "'''" + text.replace("\\", "\\\\").replace("'", "\\'") + "'''",
        lambda: 'r"' + "".join(c for c in text if c not in '\\"\n\r') + '"',
        fstring,
        lambda: f"{text!r} {draw(string_literal(allow_bytes=False))}",
    ]
    if allow_bytes:
        forms.append(lambda: repr(text.encode("utf-8")))
    return _choose(draw, forms)


@st.composite
def expression(draw: st.DrawFn, depth: int = 0) -> str:
    leaves = [
        lambda: draw(names),
        lambda: draw(string_literal()),
        lambda: str(draw(st.integers(-5, 300))),
        lambda: "None",
    ]
    if depth >= 2:
        return _choose(draw, leaves)

    def sub() -> str:
        return f"({draw(expression(depth + 1))})"

    def literal() -> str:
        return draw(string_literal())

    return _choose(
        draw,
        [
            *leaves,
            lambda: f"{literal()} % ({sub()},)",
            lambda: f"{literal()} % {{'k': {sub()}}}",
            lambda: f"{sub()} + {sub()}",
            lambda: f"[{sub()} for _c in range(2)]",
            lambda: f"({sub()} for _c in range(2) if _c)",
            lambda: f"{{{sub()} for _c in 'ab'}}",
            lambda: f"{{_c: {sub()} for _c in 'ab'}}",
            lambda: f"{sub()} if {sub()} else {sub()}",
            lambda: f"(lambda q={literal()}: q)({sub()})",
            lambda: f"str({sub()})",
            lambda: f"{literal()}.join([{sub()}, {sub()}])",
            lambda: f"{literal()}.format({sub()})",
            lambda: f"helper({sub()})",
            lambda: f"({draw(names)} := {sub()})",
            lambda: f"not {sub()}",
            lambda: f"[*{sub()}]",
        ],
    )


def indented(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


@st.composite
def block(draw: st.DrawFn, depth: int = 0, template: bool = True) -> list[str]:
    """Statements, as lines relative to the block's indentation."""
    statements = draw(st.lists(statement(depth, template), min_size=1, max_size=3))
    return [line for lines in statements for line in lines]


@st.composite
def statement(draw: st.DrawFn, depth: int, template: bool) -> list[str]:
    def inner() -> list[str]:
        return indented(draw(block(depth + 1, template)))

    def expr() -> str:
        return draw(expression())

    forms = [
        lambda: [expr()],
        lambda: [f"{draw(names)} = {expr()}"],
        lambda: [f"{draw(names)} += {draw(string_literal())}"],
        lambda: ["pass"],
        lambda: ["return" if template else f"return {expr()}"],
        lambda: [f"assert {expr()} or True, {draw(string_literal())}"],
        lambda: [f"del {draw(names)}"],
        lambda: [f"{expr()}  # " + draw(tricky_text).replace("\n", " ").replace("\r", " ")],
    ]
    if depth < 2:
        forms += [
            lambda: [f"if {expr()}:", *inner(), "else:", *inner()],
            lambda: [f"for {draw(names)} in range(2):", *inner()],
            lambda: ["try:", *inner(), "except Exception as e:", *inner()],
            lambda: ["with __import__('contextlib').nullcontext():", *inner()],
            lambda: [
                f"match {draw(names)}:",
                f"    case {draw(tricky_text)!r} | 'x':",
                *indented(inner()),
                "    case _:",
                *indented(inner()),
            ],
            lambda: draw(definition(depth + 1)),
        ]
    return _choose(draw, forms)


@st.composite
def definition(draw: st.DrawFn, depth: int = 0) -> list[str]:
    name = draw(st.sampled_from(["page", "row", "helper2", "é_t", "render"]))
    params = draw(st.sampled_from(["", "a", "a, b=None", "a, *args, title='t', **kw", "n=0"]))
    header = draw(
        st.sampled_from(
            [
                f"def {name} [html] ({params}):",
                f"def {name} [plain] ({params}):",
                f"def {name}  [ html ]  ({params}) -> str:",
                f"async def {name} [html] ({params}):",
                f"template {name}({params}):",
                f"def {name}({params}):",
            ]
        )
    )
    template = "[" in header or header.startswith("template")
    decorators = draw(st.sampled_from([[], ["@staticmethod"], ["@(lambda f: f)"]]))
    return [*decorators, header, *indented(draw(block(depth, template)))]


@st.composite
def module(draw: st.DrawFn) -> str:
    items = draw(
        st.lists(
            st.one_of(
                definition(),
                st.builds(lambda d: ["class C:", *indented(d)], definition()),
                st.builds(lambda e: [f"CONSTANT = {e}"], expression()),
                st.just(["from ptl_wsgi.html import htmltext"]),
            ),
            min_size=1,
            max_size=4,
        )
    )
    docstring = draw(st.sampled_from(["", '"""Module docstring."""\n']))
    future = draw(st.sampled_from(["", "from __future__ import annotations\n"]))
    body = "\n".join(line for lines in items for line in lines)
    return f"{docstring}{future}def helper(v):\n    return v\n{body}\n"


def python_twin(source: str) -> str:
    """*source* with its template annotations removed: plain Python of the same shape."""
    source = re.sub(r"\[ ?(?:html|plain) ?\]", "", source)
    return re.sub(r"(?m)^(\s*)template (\w+)", r"\1def \2", source)


# -- mutations ---------------------------------------------------------------------------

TRICKY = [*"[](){}:'\"\\\n\r\t #%f@\x0c", "é", "\ufeff", "\x00", "[html]", "def ", "    "]


@st.composite
def mutated(draw: st.DrawFn) -> str | bytes:
    source = draw(module())
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(source)))
        end = draw(st.integers(at, min(len(source), at + 12)))
        action = draw(st.sampled_from(["insert", "delete", "duplicate", "replace"]))
        if action == "insert":
            source = source[:at] + draw(st.sampled_from(TRICKY)) + source[at:]
        elif action == "delete":
            source = source[:at] + source[end:]
        elif action == "duplicate":
            source = source[:end] + source[at:end] + source[end:]
        else:
            source = source[:at] + draw(st.sampled_from(TRICKY)) + source[end:]
    if draw(st.booleans()):
        return source
    data = source.encode("utf-8")
    at = draw(st.integers(0, len(data)))
    junk = draw(st.sampled_from([b"", b"\xff", b"\xc3", b"\xed\xa0\x80", b"# coding: latin-1\n"]))
    return data[:at] + junk + data[at:]


# -- crash safety: run in a child ----------------------------------------------------------


def run_compiled(code: CodeType) -> None:
    """Execute *code* and call every function it defines with markup-laden arguments."""
    from ptl_wsgi.html import htmltext

    namespace: dict[str, Any] = {"__name__": "fuzzed", "__file__": __file__}
    try:
        exec(code, namespace)
    except Exception:
        return
    arguments = ["<b>&'\"", htmltext("<i>"), None, 7, ["<x>"]]
    for value in list(namespace.values()):
        if callable(value) and getattr(value, "__module__", None) == "fuzzed":
            for argument in arguments:
                try:
                    result = value(argument)
                    if hasattr(result, "__await__"):
                        result.close()
                    str(result)
                except SystemError:
                    raise  # an internal error: a bug in C code or in the generated code
                except Exception:
                    continue


# The parent passes its profile's budget (tests/conftest.py): the child has no conftest.
@settings(
    max_examples=int(os.environ.get("PTL_FUZZ_RUN_EXAMPLES", "100")),
    suppress_health_check=list(HealthCheck),
    deadline=None,
    derandomize=True,
    database=None,
)
@given(st.one_of(module(), mutated()))
def compile_and_run(source: str | bytes) -> None:
    # Compile errors are the in-process tests' business; this one looks for crashes.
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            code = compiler.compile_ptl(source, FILENAME)
    except SystemError:
        raise
    except Exception:
        return
    run_compiled(code)
