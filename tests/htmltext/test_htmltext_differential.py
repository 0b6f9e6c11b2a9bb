"""Property tests: the C twin behaves exactly like the Python reference.

The differential tests (``twins`` fixture, skipped while the accelerator is
not built) run each operation on both twins with the same random inputs and
require the same outcome: the same value and type name, or the same exception
type.  Inputs are described abstractly (``("ht", text)``, ``("int", 3)``, ...)
and built separately for each twin, so that each one gets its own htmltext.

The properties at the end need no second twin: agreement with
``html.escape`` and ``str % args``, and that text from an untrusted input
never reaches the output as markup.

Hypothesis runs derandomized (profile "ci" in conftest.py).
"""

from __future__ import annotations

import html
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import Markup
from ptl_helpers import HtmlObject

from ptl_wsgi.escaping.nonce import slots_of

DIFF = settings(max_examples=200)
PROPERTY = settings(max_examples=200)

# -- random text of all three str kinds ------------------------------------------

SPECIAL = list("&<>\"'%{}")
latin1 = st.characters(min_codepoint=0x20, max_codepoint=0xFF)
bmp = st.characters(min_codepoint=0x100, max_codepoint=0xFFFF, exclude_categories=("Cs",))
astral = st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF, exclude_categories=("Cs",))
chars = st.one_of(st.sampled_from(SPECIAL), latin1, bmp, astral)
texts = st.text(chars, max_size=16)
# Texts of one guaranteed kind, each with markup characters, for the escape tests.
kind_texts = st.one_of(
    st.text(st.one_of(st.sampled_from(SPECIAL), latin1), max_size=40),
    st.text(st.one_of(st.sampled_from(SPECIAL), latin1, bmp), max_size=40),
    st.text(st.one_of(st.sampled_from(SPECIAL), latin1, astral), max_size=40),
)

# -- abstract values, built per twin -------------------------------------------------


class PlainObject:
    """An untrusted non-str whose str() and repr() are the random text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"PlainObject({self.text!r})"


class Text(str):
    """A str subclass without ``__html__``: untrusted."""


class LyingTuple(tuple):
    """A tuple whose Python-level protocol hides its items: str's % ignores it."""

    def __len__(self) -> int:
        return 1

    def __iter__(self):
        return iter(("lie",))

    def __getitem__(self, index: Any) -> Any:
        return "lie<"


class LyingDict(dict):
    """A dict subclass: str's % looks its keys up with ``__getitem__``, never ``keys``."""

    def __getitem__(self, key: Any) -> Any:
        return f"<{key}>" if key == "b" else dict.__getitem__(self, key)

    def keys(self):
        return ["never"]


# Where the C join's digit writer changes width or leaves long long.
INT_EDGES = (
    9, 10, 99, 100, -9, -10, -99, -100, 10**18, 10**19 - 1, 10**19, -(10**19),
    2**63 - 1, -(2**63), 2**63, -(2**63) - 1,
)  # fmt: skip


def leaf_values(text_strategy: st.SearchStrategy[str]) -> st.SearchStrategy[tuple]:
    return st.one_of(
        text_strategy.map(lambda s: ("str", s)),
        text_strategy.map(lambda s: ("ht", s)),
        # Markup carrying CSP nonce slots (escaping.nonce.carrier), as a template makes it.
        text_strategy.flatmap(
            lambda s: st.lists(st.integers(0, len(s)), max_size=3).map(
                lambda slots: ("nonced", s, tuple(sorted(slots)))
            )
        ),
        text_strategy.map(lambda s: ("markup", s)),
        text_strategy.map(lambda s: ("obj", s)),
        text_strategy.map(lambda s: ("plain", s)),
        text_strategy.map(lambda s: ("strsub", s)),
        st.integers(-300, 0x110005).map(lambda n: ("int", n)),
        st.sampled_from([0, 1, 38, 39, 60, 62, 0x1F600]).map(lambda n: ("int", n)),
        st.sampled_from(INT_EDGES).map(lambda n: ("int", n)),
        st.integers().map(lambda n: ("int", n)),
        st.floats(allow_nan=True, allow_infinity=True).map(lambda f: ("float", f)),
        st.just(("none",)),
        st.booleans().map(lambda b: ("bool", b)),
    )


KEYS = st.sampled_from(["a", "b", "", "0", "<k>"])
leaves = leaf_values(texts)
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda items: ("tuple", items)),
        st.lists(inner, max_size=3).map(lambda items: ("list", items)),
        st.dictionaries(KEYS, inner, max_size=3).map(lambda d: ("dict", d)),
        st.lists(inner, max_size=3).map(lambda items: ("lytuple", items)),
        st.dictionaries(KEYS, inner, max_size=3).map(lambda d: ("lydict", d)),
    ),
    max_leaves=6,
)


def build(desc: tuple, impl: Any) -> Any:
    """The concrete value described by *desc*, using *impl*'s htmltext."""
    kind = desc[0]
    if kind == "str":
        return desc[1]
    if kind == "ht":
        return impl.htmltext(desc[1])
    if kind == "nonced":
        return impl.nonced.made(desc[1], desc[2])
    if kind == "markup":
        return Markup(desc[1])
    if kind == "obj":
        return HtmlObject(desc[1])
    if kind == "plain":
        return PlainObject(desc[1])
    if kind == "strsub":
        return Text(desc[1])
    if kind in ("int", "float", "bool"):
        return desc[1]
    if kind == "none":
        return None
    if kind == "tuple":
        return tuple(build(d, impl) for d in desc[1])
    if kind == "list":
        return [build(d, impl) for d in desc[1]]
    if kind == "dict":
        return {k: build(d, impl) for k, d in desc[1].items()}
    if kind == "lytuple":
        return LyingTuple(build(d, impl) for d in desc[1])
    if kind == "lydict":
        return LyingDict({k: build(d, impl) for k, d in desc[1].items()})
    raise AssertionError(desc)


def describe(result: Any) -> Any:
    """A comparable summary of a result: type names and text (and the nonce slots it
    carries), recursively."""
    if isinstance(result, (list, tuple)):
        return (type(result).__name__, [describe(x) for x in result])
    return (type(result).__name__, str(result), slots_of(result))


def outcome(operation: Any, impl: Any) -> Any:
    try:
        return describe(operation(impl))
    except Exception as exc:
        return ("raises", type(exc).__name__)


def assert_same(twins: tuple, operation: Any) -> None:
    python, c = twins
    expected = outcome(operation, python)
    assert outcome(operation, c) == expected


# -- format strings ----------------------------------------------------------------

PERCENT_TOKENS = [
    "%s", "%r", "%a", "%d", "%i", "%5s", "%-3s", "%.2s", "%.2f", "%x", "%#X", "%o", "%e",
    "%g", "%c", "%3c", "%%", "%(a)s", "%(b)r", "%(<k>)d", "%()s", "%*s", "%.*s", "%-*.*s",
    "%", "%(", "%(a", "%y", "%5%", "%ld", "%05d", "%+d",
    # Values in a script, a style and an unquoted attribute (markup is a value there).
    "<script>var x = %s;</script>", '<p style="color:%s">', "<i title=%s>",
]  # fmt: skip
percent_formats = st.lists(st.one_of(st.sampled_from(PERCENT_TOKENS), texts), max_size=5).map(
    "".join
)
BRACE_TOKENS = [
    "{}", "{0}", "{1}", "{a}", "{b}", "{0!r}", "{0!s:>5}", "{a!a}", "{:>4}", "{0[0]}",
    "{0[a]}", "{a.real}", "{{", "}}", "{", "}", "{0:.2}", "{:x}", "{0:{1}}", "{:*^7}",
    "{!z}", "{:d}", "{0.__class__}",
    # Values in a script, a style and an unquoted attribute (markup is a value there).
    "<script>var x = {};</script>", '<style>p{{content:"{0}"}}</style>', "<i title={a}>",
]  # fmt: skip
brace_formats = st.lists(st.one_of(st.sampled_from(BRACE_TOKENS), texts), max_size=5).map("".join)
SPECS = ["", ">5", "<3", "^7", "*^9", ".2", ".2f", "x", "#x", ",", "d", "05", "+", "!", "%"]
# Specs whose fill needs escaping, as a nested f-string spec can build them.
FILL_SPECS = ['"^9', "<<5", "&>4", "'^3", '"<6.2', "<>8.0", "\0>5", ">>2"]
specs = st.one_of(st.sampled_from(SPECS + FILL_SPECS), texts)
CONVERSIONS = [-1, ord("s"), ord("r"), ord("a")]
# Anything else given as a conversion code must fail the same way in both.
odd_conversions = st.one_of(
    st.sampled_from([115.0, -1.0, True, False, None, "s", 0, 1, 120, ord("S"), 1 << 70]),
    st.integers(-5, 200),
)
counts = st.one_of(
    st.integers(-2, 6).map(lambda n: ("int", n)),
    st.sampled_from([("float", 2.0), ("str", "2"), ("none",), ("bool", True)]),
)


# -- differential tests: C against Python ----------------------------------------------


@DIFF
@given(kind_texts)
def test_escape_str(twins, text):
    assert_same(twins, lambda impl: impl.escape_str(text))


@DIFF
@given(values)
def test_htmlescape(twins, value):
    assert_same(twins, lambda impl: impl.htmlescape(build(value, impl)))


@DIFF
@given(values)
def test_markup_of(twins, value):
    assert_same(twins, lambda impl: impl.module.markup_of(build(value, impl)))


@DIFF
@given(values)
def test_construct_and_stringify(twins, value):
    assert_same(twins, lambda impl: impl.htmltext(build(value, impl)))
    assert_same(twins, lambda impl: impl.stringify(build(value, impl)))


@DIFF
@given(texts, values)
def test_add_both_orders(twins, text, value):
    assert_same(twins, lambda impl: impl.htmltext(text) + build(value, impl))
    assert_same(twins, lambda impl: build(value, impl) + impl.htmltext(text))


@DIFF
@given(texts, counts)
def test_multiply_both_orders(twins, text, count):
    assert_same(twins, lambda impl: impl.htmltext(text) * build(count, impl))
    assert_same(twins, lambda impl: build(count, impl) * impl.htmltext(text))


@DIFF
@given(percent_formats, values)
def test_percent_format(twins, fmt, arg):
    assert_same(twins, lambda impl: impl.htmltext(fmt) % build(arg, impl))


@DIFF
@given(
    percent_formats,
    st.one_of(
        st.lists(leaves, max_size=4).map(lambda items: ("tuple", items)),
        st.dictionaries(KEYS, leaves, max_size=4).map(lambda d: ("dict", d)),
    ),
)
def test_percent_format_with_tuples_and_mappings(twins, fmt, arg):
    assert_same(twins, lambda impl: impl.htmltext(fmt) % build(arg, impl))


@DIFF
@given(brace_formats, st.lists(values, max_size=3), st.dictionaries(KEYS, values, max_size=3))
def test_format_and_format_map(twins, fmt, args, kwargs):
    def call(impl):
        return impl.htmltext(fmt).format(
            *[build(a, impl) for a in args], **{k: build(v, impl) for k, v in kwargs.items()}
        )

    assert_same(twins, call)
    assert_same(
        twins,
        lambda impl: impl.htmltext(fmt).format_map({k: build(v, impl) for k, v in kwargs.items()}),
    )


@DIFF
@given(texts, st.lists(values, max_size=5))
def test_join(twins, separator, items):
    assert_same(twins, lambda impl: impl.htmltext(separator).join([build(i, impl) for i in items]))


@DIFF
@given(st.booleans(), st.lists(st.tuples(st.sampled_from(["iadd", "call"]), values), max_size=8))
def test_template_io(twins, html_mode, steps):
    def run(impl):
        out = impl.TemplateIO(html=html_mode)
        values_so_far = []
        for how, desc in steps:
            if how == "iadd":
                out += build(desc, impl)
            else:
                out(build(desc, impl))
            values_so_far.append(describe(out.getvalue()))
        return (values_so_far, str(out))

    python, c = twins
    assert repr(outcome(run, c)) == repr(outcome(run, python))


@DIFF
@given(st.lists(st.one_of(values, st.just(("none",))), max_size=6))
def test_html_join_and_plain_join(twins, parts):
    assert_same(twins, lambda impl: impl.html_join([build(p, impl) for p in parts]))
    assert_same(twins, lambda impl: impl.plain_join(iter([build(p, impl) for p in parts])))
    assert_same(twins, lambda impl: impl.html_join(iter([build(p, impl) for p in parts])))


@DIFF
@given(values)
def test_output_functions_in_and_outside_text(twins, value):
    """What a compiled template outputs a value with, in text and outside it (where
    markup carrying nonce slots is made plain)."""
    for name in ("field_output", "outside_text", "field_outside_text"):
        assert_same(twins, lambda impl, name=name: getattr(impl, name)(build(value, impl)))
    for fmt in (None, "<p>%s</p>"):
        for name in ("percent_output", "percent_outside_text"):
            assert_same(
                twins,
                lambda impl, name=name, fmt=fmt: getattr(impl, name)(build(value, impl), fmt),
            )


@DIFF
@given(values, st.sampled_from(CONVERSIONS), specs)
def test_format_field(twins, value, conversion, spec):
    assert_same(twins, lambda impl: impl.format_field(build(value, impl), conversion, spec))


@DIFF
@given(values, st.one_of(st.sampled_from(CONVERSIONS), odd_conversions), specs)
def test_format_field_any_conversion(twins, value, conversion, spec):
    assert_same(twins, lambda impl: impl.format_field(build(value, impl), conversion, spec))


@DIFF
@given(values, st.sampled_from(CONVERSIONS), specs, st.sampled_from(["ht", "markup", "strsub"]))
def test_format_field_spec_kinds(twins, value, conversion, spec, kind):
    """A spec that is markup is trusted, any other str spec is not: same in both."""
    assert_same(
        twins,
        lambda impl: impl.format_field(build(value, impl), conversion, build((kind, spec), impl)),
    )


@DIFF
@given(values)
def test_every_constructor(twins, value):
    def constructors(impl):
        subclass = type("Sub", (impl.htmltext,), {})
        return [
            impl.module.HtmlTextBase(build(value, impl)),
            impl.htmltext(build(value, impl)),
            subclass(build(value, impl)),
            impl.htmltext.__new__(impl.htmltext, build(value, impl)),
            impl.module.HtmlTextBase.__new__(subclass, value=build(value, impl)),
            str.__new__(impl.htmltext, build(value, impl)),
        ]

    python, c = twins
    expected = outcome(constructors, python)
    assert outcome(constructors, c) == expected


BRACE_SPEC_FIELDS = ["{0:{1}}", "{0!r:{1}}", "{0:{1}{2}}", "{:{}}", "{0!s:{1!r}}", "{a:{b}}"]


@DIFF
@given(
    st.lists(st.one_of(st.sampled_from(BRACE_SPEC_FIELDS + BRACE_TOKENS), texts), max_size=4).map(
        "".join
    ),
    st.lists(st.one_of(values, st.sampled_from(FILL_SPECS).map(lambda s: ("str", s))), max_size=3),
    st.dictionaries(KEYS, st.one_of(values, st.sampled_from(FILL_SPECS).map(lambda s: ("str", s)))),
)
def test_format_nested_specs(twins, fmt, args, kwargs):
    def call(impl):
        return impl.htmltext(fmt).format(
            *[build(a, impl) for a in args], **{k: build(v, impl) for k, v in kwargs.items()}
        )

    assert_same(twins, call)


@DIFF
@given(st.booleans(), st.lists(values, max_size=4))
def test_template_io_state(twins, html_mode, items):
    def run(impl):
        out = impl.TemplateIO(html=html_mode)
        for item in items:
            out += build(item, impl)
        names = sorted(n for n in dir(out) if not n.startswith("__"))
        return (names, list(out._parts))

    assert_same(twins, run)


widths = st.integers(-2, 30).map(lambda n: ("int", n))
short_texts = st.text(chars, max_size=2)
text_args = st.one_of(leaves, st.just(("none",)))
METHOD_CALLS = st.one_of(
    st.tuples(
        st.sampled_from(
            [
                "upper",
                "lower",
                "title",
                "capitalize",
                "swapcase",
                "casefold",
                "strip",
                "lstrip",
                "rstrip",
                "splitlines",
                "split",
                "rsplit",
            ]
        ),
        st.just([]),
    ),
    st.tuples(st.sampled_from(["strip", "lstrip", "rstrip"]), st.lists(text_args, max_size=1)),
    st.tuples(st.just("replace"), st.tuples(leaves, leaves).map(list)),
    st.tuples(st.just("replace"), st.tuples(leaves, leaves, widths).map(list)),
    st.tuples(
        st.sampled_from(["center", "ljust", "rjust"]),
        st.tuples(widths, short_texts.map(lambda s: ("str", s))).map(list),
    ),
    st.tuples(
        st.sampled_from(["center", "ljust", "rjust", "zfill", "expandtabs"]),
        st.tuples(widths).map(list),
    ),
    st.tuples(
        st.sampled_from(["removeprefix", "removesuffix", "partition", "rpartition"]),
        st.tuples(leaves).map(list),
    ),
    st.tuples(st.sampled_from(["split", "rsplit"]), st.tuples(text_args, widths).map(list)),
    st.tuples(st.just("splitlines"), st.tuples(st.booleans().map(lambda b: ("bool", b))).map(list)),
)


@DIFF
@given(texts, METHOD_CALLS)
def test_wrapped_str_methods(twins, text, call):
    name, args = call
    assert_same(
        twins, lambda impl: getattr(impl.htmltext(text), name)(*[build(a, impl) for a in args])
    )


# -- properties of each twin --------------------------------------------------------------


@PROPERTY
@given(kind_texts)
def test_htmlescape_is_html_escape(impl, text):
    result = impl.htmlescape(text)
    assert type(result) is impl.htmltext
    assert str(result) == html.escape(text, quote=True)
    assert impl.escape_str(text) == html.escape(text, quote=True)


@PROPERTY
@given(kind_texts)
def test_escaping_is_idempotent_on_htmltext(impl, text):
    once = impl.htmlescape(text)
    assert str(impl.htmlescape(once)) == str(once)
    assert str(impl.htmlescape(Markup(once))) == str(once)


@PROPERTY
@given(percent_formats.filter(lambda f: not set(f) & set("&<>\"'")), values)
def test_percent_format_agrees_with_str(impl, fmt, arg):
    """Same exception type as ``str % args``; else the same text, escaped piece by piece.

    Values are built with the twin's htmltext, so markup arguments are excluded
    from the text comparison (they are kept, not escaped).
    """
    value = build(arg, impl)
    try:
        expected: Any = fmt % value
    except Exception as exc:
        expected = exc
    try:
        result = impl.htmltext(fmt) % value
    except Exception as exc:
        assert isinstance(expected, Exception), f"str gave {expected!r}, htmltext raised {exc!r}"
        assert (type(exc), str(exc)) == (type(expected), str(expected))
        return
    assert not isinstance(expected, Exception), f"str raised {expected!r}, htmltext gave {result!r}"
    assert type(result) is impl.htmltext
    if not _has_markup(arg):
        assert str(result) == html.escape(expected, quote=True)


# "{0.__class__}" is left out: the class of a markup value has an unbound __html__.
str_like_brace_formats = st.lists(
    st.one_of(st.sampled_from([t for t in BRACE_TOKENS if "__" not in t]), texts), max_size=5
).map("".join)


@PROPERTY
@given(
    str_like_brace_formats.filter(lambda f: not set(f) & set("&<>\"'")),
    st.lists(values.filter(lambda d: not _has_markup(d)), max_size=3),
)
def test_format_errors_agree_with_str(impl, fmt, args):
    """Untrusted arguments: the same exception type as ``str.format``.

    (Markup arguments are formatted by their own ``__html_format__``, which may
    refuse a spec where str would not.)
    """
    try:
        fmt.format(*[build(a, impl) for a in args])
    except Exception as exc:
        with pytest.raises(type(exc)):
            impl.htmltext(fmt).format(*[build(a, impl) for a in args])


def _has_markup(desc: tuple) -> bool:
    if desc[0] in ("ht", "markup", "obj"):
        return True
    if desc[0] in ("tuple", "list", "lytuple"):
        return any(_has_markup(d) for d in desc[1])
    if desc[0] in ("dict", "lydict"):
        return any(_has_markup(d) for d in desc[1].values())
    return False


# Trusted text never contains "<"; untrusted input always does.
trusted = st.text(chars.filter(lambda c: c != "<"), max_size=12)
untrusted_text = st.builds(lambda a, b: a + "<" + b, texts, texts)
untrusted = st.recursive(
    st.one_of(
        untrusted_text.map(lambda s: ("str", s)),
        untrusted_text.map(lambda s: ("plain", s)),
        untrusted_text.map(lambda s: ("strsub", s)),
        st.just(("int", ord("<"))),
    ),
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(lambda items: ("tuple", items)),
        st.dictionaries(KEYS, inner, min_size=1, max_size=3).map(lambda d: ("dict", d)),
    ),
    max_leaves=4,
)
trusted_percent = st.lists(
    st.one_of(st.sampled_from([t for t in PERCENT_TOKENS if "<" not in t]), trusted), max_size=4
).map("".join)
trusted_braces = st.lists(
    st.one_of(st.sampled_from([t for t in BRACE_TOKENS if "<" not in t]), trusted), max_size=4
).map("".join)
trusted_specs = st.one_of(st.sampled_from([s for s in SPECS if "<" not in s]), trusted)


# What a generated format string may legitimately make %, format() and format_map() raise.
FORMAT_ERRORS = (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError)
# What the other operations may raise: a value of the wrong type (e.g. htmltext + object()).
TYPE_ERRORS = (TypeError,)


def no_untrusted_markup(
    operation: Any,
    expected: tuple[type[BaseException], ...] = (),
    reference: Any = None,
) -> None:
    """*operation*'s result holds no "<": none was trusted.

    Only the *expected* exceptions end the check early, and, given the
    *reference* (the same operation on plain ``str``), only when it fails too:
    so a twin which raised where it should return (say, on every
    concatenation or every format call) fails the property instead of passing
    it vacuously.
    """
    try:
        result = operation()
    except expected as exc:
        if reference is not None:
            try:
                reference()
            except expected:
                return
            raise AssertionError(f"str succeeds where the twin raised {exc!r}") from exc
        return
    parts = result if isinstance(result, (list, tuple)) else [result]
    for part in parts:
        assert "<" not in str(part), result


@PROPERTY
@given(trusted, untrusted, trusted_percent, trusted_braces)
def test_untrusted_input_never_becomes_markup(impl, safe, bad, percent_fmt, brace_fmt):
    ht = impl.htmltext(safe)
    value = build(bad, impl)
    no_untrusted_markup(lambda: ht + value, TYPE_ERRORS)
    no_untrusted_markup(lambda: value + ht, TYPE_ERRORS)
    no_untrusted_markup(
        lambda: impl.htmltext(percent_fmt) % value, FORMAT_ERRORS, lambda: percent_fmt % value
    )
    no_untrusted_markup(
        lambda: impl.htmltext(brace_fmt).format(value, value, a=value, b=value),
        FORMAT_ERRORS,
        lambda: brace_fmt.format(value, value, a=value, b=value),
    )
    no_untrusted_markup(
        lambda: impl.htmltext(brace_fmt).format_map({"a": value, "b": value}),
        FORMAT_ERRORS,
        lambda: brace_fmt.format_map({"a": value, "b": value}),
    )
    no_untrusted_markup(lambda: ht.join([value, value]), TYPE_ERRORS)
    no_untrusted_markup(lambda: impl.htmlescape(value), TYPE_ERRORS)
    no_untrusted_markup(lambda: impl.html_join([ht, value, None]), TYPE_ERRORS)
    no_untrusted_markup(lambda: ht.replace(safe[:1], value), TYPE_ERRORS)
    for conversion in CONVERSIONS:
        no_untrusted_markup(lambda: impl.format_field(value, conversion, ""), TYPE_ERRORS)  # noqa: B023
    out = impl.TemplateIO(html=True)
    out += ht
    out += value
    out(value)
    no_untrusted_markup(out.getvalue)


@PROPERTY
@given(trusted, untrusted, trusted_specs, st.sampled_from(CONVERSIONS))
def test_format_field_never_trusts_untrusted_input(impl, safe, bad, spec, conversion):
    value = build(bad, impl)
    converted = {-1: lambda v: v, ord("s"): str, ord("r"): repr, ord("a"): ascii}[conversion]
    no_untrusted_markup(
        lambda: impl.format_field(value, conversion, spec),
        FORMAT_ERRORS,
        lambda: format(converted(value), spec),
    )
    no_untrusted_markup(
        lambda: impl.htmltext(safe + "{0:" + spec + "}").format(value),
        FORMAT_ERRORS,
        lambda: (safe + "{0:" + spec + "}").format(value),
    )


@PROPERTY
@given(texts, st.integers(0, pickle.HIGHEST_PROTOCOL))
def test_pickle_round_trip(impl, text, protocol):
    loaded = pickle.loads(pickle.dumps(impl.htmltext(text), protocol))
    assert type(loaded) is impl.htmltext
    assert loaded == text
