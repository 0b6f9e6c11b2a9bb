"""The escapers of contextual escaping: one per place a value can land, by name.

The context engine (:mod:`ptl_wsgi.escaping.context`) names the escaper a
place needs; :func:`build` makes the functions for one htmltext class, each
taking any value and returning markup of that class (a non-negative int is
returned as it is where its digits mean the same escaped or not, and the join
formats it).  Values that are markup (:func:`~ptl_wsgi.escaping.rules.is_markup`)
pass through unchanged in every context, as they do in text, except that a
URL's scheme is still checked.

A name is ``BASE`` (inside ``<script>``, ``<style>`` or a comment) or
``BASE_LAYER``: the base encodes for the inner language (``url``, ``js``,
``css`` modules), the layer for the HTML around it: ``q`` a quoted attribute
value (HTML escaping), ``u`` an unquoted one, ``u0`` the start of an unquoted
one.  See docs/contextual-escaping.md for the table.
"""

from __future__ import annotations

import html

from ptl_wsgi.escaping import css, js, markup, url
from ptl_wsgi.escaping.rules import (
    DEFAULT_SCHEMES,
    INT_SAFE_BASES,
    SCRIPT_SCHEMES,
    UNSAFE_CSS,
    UNSAFE_URL,
    URL_START_BASES,
    is_markup,
)

# Not typing.TYPE_CHECKING: importing typing costs a one-shot process its time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol

    Escaper = Callable[[Any], Any]
    Text = Callable[[str], str]

    class Twin(Protocol):
        """What :func:`build` needs of an htmltext twin (``_htmltext_py`` or ``_htmltext_c``)."""

        def escape_str(self, s: str, /) -> str: ...

        def contextual_escaper(
            self,
            cls: type,
            reference: Escaper,
            plan: Callable[[], dict[str, Any]] | None,
            output: bool = False,
            /,
        ) -> Escaper: ...


__all__ = ["build", "for_class", "format_value", "percent_field", "percent_value"]


def format_value(
    value: Any,
    conversion: int,
    spec: str,
    format_field: Callable[..., Any],
    markup: Callable[[str], Any],
) -> Any:
    """An f-string or ``str.format`` field's value with its conversion and spec applied.

    Markup (``__html_format__``, ``__html__``) with no conversion stays markup (made
    by *markup*; *format_field*, a twin's, formats it as in text); anything else
    becomes the str that the field would produce.
    """
    if conversion == -1 and type(value) is not str:
        html_format = getattr(value, "__html_format__", None)
        if html_format is not None:
            return markup(html_format(spec))
        if is_markup(value):
            return markup(format_field(value, -1, spec))
    if conversion == 115:
        value = str(value)
    elif conversion == 114:
        value = repr(value)
    elif conversion == 97:
        value = ascii(value)
    return format(value, spec)


def percent_value(value: Any, fmt: Any) -> Any:
    """The value a lone ``%s`` formats: a 1-tuple gives its item, as ``fmt % value`` does."""
    if isinstance(value, tuple):
        if tuple.__len__(value) != 1:
            _ = str(fmt) % value  # str's own error for the wrong number of values
            raise ValueError("percent_value(): fmt must have one field")
        value = tuple.__getitem__(value, 0)
    return value


def percent_field(value: Any, spec: str) -> str:
    """*value* formatted by one %-field *spec* (``%r``, ``%.5s``: no key), before its escaper."""
    return spec % (value,)


def _identity(text: str) -> str:
    return text


def _bases(escape: Text) -> dict[str, Text]:
    return {
        "text": _identity,
        "comment": markup.comment,
        "drop": markup.drop,
        "url": url.url,
        "url_path": url.url_path,
        "url_slash": url.url_slash,
        "url_query": url.url_query,
        "srcset": url.srcset,
        "url_list": url.url_list,
        "js_string": js.js_string,
        "json_string": js.json_string,
        "js_regexp": js.js_regexp,
        "css": css.css,
        "css_string": css.css_string,
        "srcdoc": escape,
    }


def _layers(escape: Text) -> dict[str, Text]:
    return {"": _identity, "q": escape, "u": markup.unquoted, "u0": markup.unquoted_start}


# The characters a plan describes one by one; the rest of a value's characters are
# the twin's business (docs: "what stays in Python").
_ASCII = tuple(map(chr, range(128)))
# Characters outside ASCII that no escaper below changes unless it changes all of
# them: a plan says whether its escaper keeps them (the twin keeps them only outside
# the ranges it always leaves to the reference; tests/escaping/test_contextual_twins.py checks
# every code point).
_NON_ASCII_PROBE = "\u00e9\u4e2d\U0001f600"
# Bases left to the reference in every twin: lists of URLs (SVG animation values,
# image candidates: rare, and their rule is per item), and a comment in a script or
# style (the value is dropped).
_UNPLANNED = ("srcset", "url_list", "drop")

if TYPE_CHECKING:
    Plan = Callable[[], dict[str, Any]]


def _shared(first: str, second: str) -> int:
    """How many characters *first* and *second* start with in common."""
    count = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        count += 1
    return count


def _affixes(first: str, second: str) -> tuple[str, str]:
    """What the outputs *first* and *second* (of two different values) wrap their value in."""
    head = _shared(first, second)
    tail = _shared(first[head:][::-1], second[head:][::-1])
    return first[:head], first[len(first) - tail :]


def _planner(base_name: str, base: Text, layer: Text, char_layer: Text, ints: bool) -> Plan | None:
    """The plan of one escaper for a twin's fast path: *base* then *layer*, described by
    what they make of each ASCII character (*char_layer* is *layer* for a non-empty text:
    the start of an unquoted value makes only empty text ``""``).  None for the bases
    whose rule is not per character (:data:`_UNPLANNED`).

    A plan is made when the escaper first meets a value, from the reference functions,
    so a twin spells no character set of its own.  What the twin must still know, it is
    told: the scheme rule of a URL's start (:func:`url.url`: the allowed and the script
    schemes), the leading "/" of :func:`url.url_slash`, the sequences the CSS filter
    refuses.  Keys: ``empty`` (the output for ""), ``table`` (128 outputs, one per ASCII
    character, without ``prefix`` and ``suffix``; None where the reference decides),
    ``prefix``, ``suffix``, ``non_ascii`` (other characters are kept), ``ints`` (a
    non-negative int passes as it is), ``markup`` (the class's markup passes as it is),
    ``first_slash``, ``refused``, ``refusal`` and ``refused_chars`` (the CSS filter's),
    ``schemes``, and for JS values ``int_affixes`` and ``constants`` (the outputs of
    True, False and None).
    """
    if base_name in _UNPLANNED:
        return None

    def plan() -> dict[str, Any]:
        if base_name == "js_value":
            whole: Text = js.js_value
        elif base_name in ("url", "url_slash"):
            whole = url.url_path  # and the rule of the start: "schemes", "first_slash"
        else:
            whole = base

        def char(text: str) -> str | None:
            if base_name == "css" and css.css(text) != text:
                return None  # the filter refuses the whole value: the reference decides
            return char_layer(whole(text))

        probes = [char("a") or "", char("b") or ""]
        prefix, suffix = _affixes(*probes)
        table: list[str | None] = []
        for character in _ASCII:
            out = char(character)
            inner = len(out or "") - len(prefix) - len(suffix)
            if out is None or inner < 0 or not (out.startswith(prefix) and out.endswith(suffix)):
                table.append(None)
            else:
                table.append(out[len(prefix) : len(prefix) + inner])
        found: dict[str, Any] = {
            "empty": layer(base("")),
            "table": tuple(table),
            "prefix": prefix,
            "suffix": suffix,
            # (The CSS filter's words ignore case, and outside ASCII that is Unicode's
            # case folding: U+017F is an "s".  The reference decides there.)
            "non_ascii": base_name != "css"
            and char(_NON_ASCII_PROBE) == prefix + _NON_ASCII_PROBE + suffix,
            "ints": ints,
            "markup": base_name not in URL_START_BASES,
            "first_slash": layer(url.url_slash("/")) if base_name == "url_slash" else None,
            "refused": css.REFUSED if base_name == "css" else None,
            # What the CSS filter makes of a value it refuses, and the characters that
            # make it refuse one wherever they stand.
            "refusal": layer(UNSAFE_CSS) if base_name == "css" else None,
            "refused_chars": "".join(
                c for c in _ASCII if base_name == "css" and css.css(c) == UNSAFE_CSS
            ),
            "schemes": None,
            "int_affixes": None,
            "constants": None,
        }
        if base_name == "url":
            allowed = url.allowed_schemes(DEFAULT_SCHEMES)
            found["schemes"] = (tuple(sorted(allowed)), tuple(sorted(SCRIPT_SCHEMES)))
        if base_name == "js_value":
            found["int_affixes"] = _affixes(layer(js.js_value(1)), layer(js.js_value(2)))
            found["constants"] = tuple(layer(js.js_value(v)) for v in (True, False, None))
        return found

    return plan


def build(cls: type, twin: Twin, outputs: bool = False) -> dict[str, Escaper]:
    """Every escaper, by the name the context engine gives it, returning *cls* markup.

    *twin* is the htmltext twin whose class *cls* is: its ``escape_str`` is HTML
    escaping of a str (the quoted-attribute layer), and its ``contextual_escaper``
    makes each escaper fast: the Python twin keeps the reference escaper built here,
    the C twin answers the common values itself from the escaper's plan
    (:func:`_planner`) and calls the reference for everything else.

    With *outputs*, what compiled templates call instead: the same escapers, except
    that one for a quoted attribute (``BASE_q``) may return the str that its base
    makes, unescaped, instead of markup: the join of a template's output escapes a
    str for HTML, and that is the ``q`` layer (as ``field_output`` leaves a str to the
    join).  Not for anything that takes the result for markup (the planner does).
    """
    escape = twin.escape_str

    def make(text: str) -> Any:
        return str.__new__(cls, text)

    def to_markup(value: Any) -> Any:
        """*cls* for a markup value, else None."""
        if type(value) is cls:
            return value
        if not is_markup(value):
            return None
        return make(str(value.__html__()))

    def compose(name: str, base: Text, layer: Text) -> Escaper:
        ints = name in INT_SAFE_BASES
        # Where a URL starts, markup is trusted as markup but its scheme is still
        # checked: markup made for text (a fragment, a helper template's result) has
        # its values escaped for text only, and a script URL in it would run.
        checks_scheme = name in URL_START_BASES

        def escaper(value: Any) -> Any:
            if type(value) is str:
                text = value
            elif type(value) is int and ints and value >= 0:
                return value
            else:
                found = to_markup(value)
                if found is not None:
                    if checks_scheme and UNSAFE_URL in base(html.unescape(str(found))):
                        return make(layer(UNSAFE_URL))
                    return found
                text = str(value)
            return make(layer(base(text)))

        return escaper

    def compose_js_value(layer: Text, encode: Callable[[Any], str] = js.js_value) -> Escaper:
        def escaper(value: Any) -> Any:
            found = to_markup(value)
            if found is not None:
                return found
            return make(layer(encode(value)))

        return escaper

    def attr_name(value: Any) -> Any:
        """Between a tag's attributes: only names of plain attributes pass."""
        found = to_markup(value)
        if found is not None:
            return found
        text = value if type(value) is str else str(value)
        if text and not markup.attribute_names(text):
            return make(UNSAFE_CSS)
        return make(text)

    def tag_attrs(value: Any) -> Any:
        """Right after a tag's name: attribute names, after a space (even for an empty
        value: "<scr" + "" + "ipt>" must not be the <script> the compiler did not see)."""
        escaped = attr_name(value)
        return escaped if is_markup(value) else make(" " + escaped)

    def named(function: Escaper, name: str) -> Escaper:
        function.__name__ = function.__qualname__ = name
        return function

    escapers: dict[str, Escaper] = {}
    layers = _layers(escape)
    for base_name, base in [*_bases(escape).items(), ("js_value", js.js_value)]:
        for layer_name, layer in layers.items():
            name = f"{base_name}_{layer_name}" if layer_name else base_name
            if base_name == "js_value":
                reference = named(compose_js_value(layer), name)
            else:
                reference = named(compose(base_name, base, layer), name)
            char_layer = layers["u" if layer_name == "u0" else layer_name]
            plan = _planner(base_name, base, layer, char_layer, base_name in INT_SAFE_BASES)
            if outputs and layer_name == "q" and plan is not None:
                bare = _planner(
                    base_name, base, _identity, _identity, ints=base_name in INT_SAFE_BASES
                )
                escapers[name] = twin.contextual_escaper(cls, reference, bare, True)
            else:
                escapers[name] = twin.contextual_escaper(cls, reference, plan)
    # (Script bodies only; no plan: a JSON value is one call of json.dumps.)
    escapers["json_value"] = named(compose_js_value(_identity, js.json_value), "json_value")
    escapers["attr_name"] = named(attr_name, "attr_name")
    escapers["tag_attrs"] = named(tag_attrs, "tag_attrs")
    return escapers


_built: dict[tuple[type, bool], dict[str, Escaper]] = {}


def for_class(cls: type, twin: Twin, outputs: bool = False) -> dict[str, Escaper]:
    """:func:`build` for *cls*, once: compiled templates, t-strings and run-time
    formatting of one twin share its escapers (compiled templates its *outputs*)."""
    key = (cls, outputs)
    found = _built.get(key)
    if found is None:
        found = _built.setdefault(key, build(cls, twin, outputs))
    return found
