"""The escapers of contextual escaping: one per place a value can land, by name.

The context engine (:mod:`ptl_wsgi.escaping.context`) names the escaper a
place needs; :func:`build` makes the functions for one htmltext class, each
taking any value and returning markup of that class (a non-negative int is
returned as it is where its digits mean the same escaped or not, and the join
formats it).  Values that are markup (:func:`~ptl_wsgi.escaping.rules.is_markup`)
pass through unchanged where the language is HTML, as they do in text (a URL's
scheme is still checked); in a script or a style
(:data:`~ptl_wsgi.escaping.rules.MARKUP_AS_VALUE_BASES`) markup is HTML, not code:
its text is escaped as any value's.

A name is ``BASE`` (inside ``<script>``, ``<style>`` or a comment) or
``BASE_LAYER``: the base encodes for the inner language (``url``, ``js``,
``css`` modules), the layer for the HTML around it: ``q`` a quoted attribute
value (HTML escaping), ``u`` an unquoted one, ``u0`` the start of an unquoted
one.  See docs/contextual-escaping.md for the table.
"""

from __future__ import annotations

from ptl_wsgi.escaping.rules import (
    DEFAULT_SCHEMES,
    INT_SAFE_BASES,
    MARKUP_AS_VALUE_BASES,
    MARKUP_ESCAPED_LAYERS,
    SCRIPT_SCHEMES,
    UNSAFE_CSS,
    UNSAFE_URL,
    URL_START_BASES,
    is_json_markup,
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


__all__ = [
    "build",
    "for_class",
    "one_for_class",
    "format_value",
    "percent_field",
    "percent_value",
    "plans",
    "plans_source",
    "references",
]


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
    from ptl_wsgi.escaping import css, js, markup, url

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
        "js_value": js.js_value,
    }


def _layers(escape: Text) -> dict[str, Text]:
    from ptl_wsgi.escaping import markup

    return {"": _identity, "q": escape, "u": markup.unquoted, "u0": markup.unquoted_start}


def _markup_layers() -> dict[str, Text]:
    """What each layer does to the text of markup kept as markup
    (:data:`~ptl_wsgi.escaping.rules.MARKUP_ESCAPED_LAYERS`)."""
    from ptl_wsgi.escaping import markup

    return {
        "": _identity,
        "q": _identity,
        "u": markup.unquoted_markup,
        "u0": markup.unquoted_markup_start,
    }


# The characters a plan describes one by one; the rest of a value's characters are
# the twin's business (docs: "what stays in Python").
_ASCII = tuple(map(chr, range(128)))
# Characters outside ASCII that no escaper below changes unless it changes all of
# them: a plan says whether its escaper keeps them (the twin keeps them only outside
# the ranges it always leaves to the reference; tests/escaping/test_contextual_twins.py checks
# every code point).
_NON_ASCII_PROBE = "\u00e9\u4e2d\U0001f600"
# Bases left to the reference in every twin: a comment in a script or style (the value
# is dropped).
_UNPLANNED = ("drop",)
# Lists of URLs, whose rule is per item: the plan names the list (``list``), gives the
# table of an item's characters (srcset: a URL's, as url_path makes them; SVG values:
# the layer's alone, the value being kept) and the scheme rule of each item's start.
_LISTS = ("srcset", "url_list")

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


def _planner(
    base_name: str, base: Text, layer: Text, char_layer: Text, ints: bool, layer_name: str = ""
) -> Plan | None:
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
    ``schemes``, for JS values ``int_affixes`` and ``constants`` (the outputs of
    True, False and None), and for lists of URLs ``list`` (the base's name) and, for
    ``srcset``, ``separators`` (the outputs of " " and ",").
    """
    if base_name in _UNPLANNED:
        return None

    def plan() -> dict[str, Any]:
        from ptl_wsgi.escaping import css, js, url

        if base_name == "js_value":
            whole: Text = js.js_value
        elif base_name in ("url", "url_slash", "srcset"):
            whole = url.url_path  # and the rule of the start: "schemes", "first_slash"
        elif base_name == "url_list":
            whole = _identity  # each item's start checked ("schemes"), the value kept
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
            # (A list is answered in ASCII only.)
            "non_ascii": base_name not in ("css", *_LISTS)
            and char(_NON_ASCII_PROBE) == prefix + _NON_ASCII_PROBE + suffix,
            "ints": ints,
            "markup": base_name not in URL_START_BASES
            and base_name not in MARKUP_AS_VALUE_BASES
            and layer_name not in MARKUP_ESCAPED_LAYERS,
            "first_slash": layer(url.url_slash("/")) if base_name == "url_slash" else None,
            "refused": css.REFUSED if base_name == "css" else None,
            # What the CSS filter makes of a value it refuses, and the characters that
            # make it refuse one wherever they stand.
            # (srcset: what it makes of a value with a descriptor that is not a number.)
            "refusal": layer(UNSAFE_CSS)
            if base_name == "css"
            else layer(UNSAFE_URL)
            if base_name == "srcset"
            else None,
            "refused_chars": "".join(
                c for c in _ASCII if base_name == "css" and css.css(c) == UNSAFE_CSS
            ),
            "schemes": None,
            "int_affixes": None,
            "constants": None,
            "list": base_name if base_name in _LISTS else None,
            # What the layer makes of the separators of image candidates.
            "separators": (layer(" "), layer(",")) if base_name == "srcset" else None,
        }
        if base_name in ("url", *_LISTS):
            allowed = url.allowed_schemes(DEFAULT_SCHEMES)
            found["schemes"] = (tuple(sorted(allowed)), tuple(sorted(SCRIPT_SCHEMES)))
        if base_name == "js_value":
            found["int_affixes"] = _affixes(layer(js.js_value(1)), layer(js.js_value(2)))
            found["constants"] = tuple(layer(js.js_value(v)) for v in (True, False, None))
        return found

    return plan


# The names of the bases and layers (their functions: _bases and _layers).
_BASE_NAMES = (
    "text", "comment", "drop", "url", "url_path", "url_slash", "url_query", "srcset",
    "url_list", "js_string", "json_string", "js_regexp", "css", "css_string", "srcdoc",
    "js_value",
)  # fmt: skip
_LAYER_NAMES = ("", "q", "u", "u0")
# Escapers with no fast path in any twin: the reference is the escaper.
_REFERENCE_ONLY = ("json_value", "attr_name", "tag_attrs")
# What a compiled template's quoted-attribute escaper (``outputs``) is planned by.
_OUTPUT = ":output"


def _escaper_names() -> list[tuple[str, str, str]]:
    """(name, base, layer) of every escaper with a base and a layer."""
    return [
        (f"{base}_{layer}" if layer else base, base, layer)
        for base in _BASE_NAMES
        for layer in _LAYER_NAMES
    ]


def references(cls: type, twin: Twin) -> dict[str, Escaper]:
    """The reference escapers, by name: what each context does to any value, returning
    *cls* markup (*twin*'s ``escape_str`` is the quoted-attribute layer).  The Python
    twin's escapers are these; the C twin's call them for what their plan leaves."""
    import html

    from ptl_wsgi.escaping import js, markup

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

    def compose(name: str, base: Text, layer: Text, markup_layer: Text) -> Escaper:
        ints = name in INT_SAFE_BASES
        kept = name not in MARKUP_AS_VALUE_BASES
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
                found = to_markup(value) if kept else None
                if found is not None:
                    if checks_scheme and UNSAFE_URL in base(html.unescape(str(found))):
                        return make(layer(UNSAFE_URL))
                    if markup_layer is not _identity:
                        return make(markup_layer(str(found)))
                    return found
                text = _text(value)
            return make(layer(base(text)))

        return escaper

    def compose_js_value(layer: Text, encode: Callable[[Any], str] = js.js_value) -> Escaper:
        def escaper(value: Any) -> Any:
            if is_json_markup(value):
                # JSON a trusted encoder made for a page: the value it is ("a-" and a
                # "-1" must not make "a--1").
                text = str(value)
                return make(layer(" " + text if text.startswith("-") else text))
            if is_markup(value):
                # HTML, not JavaScript: its text is a string there.
                value = _text(value)
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

    found: dict[str, Escaper] = {}
    bases, layers, markup_layers = _bases(escape), _layers(escape), _markup_layers()
    for name, base_name, layer_name in _escaper_names():
        layer = layers[layer_name]
        if base_name == "js_value":
            found[name] = _named(compose_js_value(layer), name)
        else:
            kept = markup_layers[layer_name]
            found[name] = _named(compose(base_name, bases[base_name], layer, kept), name)
    # (Script bodies only; no plan: a JSON value is one call of json.dumps.)
    found["json_value"] = _named(compose_js_value(_identity, js.json_value), "json_value")
    found["attr_name"] = _named(attr_name, "attr_name")
    found["tag_attrs"] = _named(tag_attrs, "tag_attrs")
    return found


def _text(value: Any) -> str:
    """The text of a value where it is escaped: a markup value's ``__html__()``
    (what it would put in text), anything else's ``str()``."""
    if is_markup(value):
        return str(value.__html__())
    return str(value)


def _named(function: Escaper, name: str) -> Escaper:
    function.__name__ = function.__qualname__ = name
    return function


def plans(escape: Text) -> dict[str, dict[str, Any]]:
    """Every escaper's plan (:func:`_planner`), made from the reference functions, by
    the escaper's name (``NAME:output`` for a compiled template's quoted attribute).
    :mod:`ptl_wsgi.escaping._plans` stores them, so that a render needs none of the
    reference's modules (``tools/escaper_plans.py`` rewrites it; a test keeps it equal)."""
    bases, layers = _bases(escape), _layers(escape)
    found: dict[str, dict[str, Any]] = {}
    for name, base_name, layer_name in _escaper_names():
        ints = base_name in INT_SAFE_BASES
        char_layer = layers["u" if layer_name == "u0" else layer_name]
        base, layer = bases[base_name], layers[layer_name]
        plan = _planner(base_name, base, layer, char_layer, ints, layer_name)
        if plan is None:
            continue
        found[name] = plan()
        if layer_name == "q":
            bare = _planner(base_name, base, _identity, _identity, ints)
            assert bare is not None
            found[name + _OUTPUT] = bare()
    return found


def plans_source(escape: Text) -> str:
    """The source of :mod:`ptl_wsgi.escaping._plans` for :func:`plans` of *escape*."""
    lines = [
        '"""Every contextual escaper\'s plan, made by ptl_wsgi.escaping.escapers.plans().',
        "",
        "Written by tools/escaper_plans.py; tests/escaping/test_escaper_plans.py keeps it equal to",
        "what the reference makes.  Do not edit.",
        '"""',
        "",
        "# ruff: noqa: E501",
        "# fmt: off",
        "PLANS: dict[str, dict[str, object]] = {",
    ]
    for name, plan in sorted(plans(escape).items()):
        lines.append(f"    {name!r}: {{")
        for key, value in sorted(plan.items()):
            lines.append(f"        {key!r}: {value!r},")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _stored_plan(name: str) -> Plan:
    def plan() -> dict[str, Any]:
        from ptl_wsgi.escaping._plans import PLANS

        return PLANS[name]

    return plan


def _probe(value: Any) -> Any:
    return value


def build(cls: type, twin: Twin, outputs: bool = False) -> dict[str, Escaper]:
    """Every escaper, by the name the context engine gives it, returning *cls* markup.

    *twin* is the htmltext twin whose class *cls* is: its ``escape_str`` is HTML
    escaping of a str (the quoted-attribute layer), and its ``contextual_escaper``
    makes each escaper fast: the Python twin keeps the reference escaper
    (:func:`references`), the C twin answers the common values itself from the
    escaper's stored plan (:func:`plans`) and calls the reference for everything
    else.  For such a twin the references are made, and their modules imported, when
    one is first needed: a render whose values the plans answer imports none of them.

    With *outputs*, what compiled templates call instead: the same escapers, except
    that one for a quoted attribute (``BASE_q``) may return the str that its base
    makes, unescaped, instead of markup: the join of a template's output escapes a
    str for HTML, and that is the ``q`` layer (as ``field_output`` leaves a str to the
    join).  Not for anything that takes the result for markup (the planner does).
    """
    escapers: dict[str, Escaper] = {}
    for name in _names():
        escapers[name] = _make(cls, twin, name, outputs)
    return escapers


_name_table: dict[str, tuple[str, str]] = {}  # name: (base, layer), made once


def _names() -> dict[str, tuple[str, str]]:
    """Every escaper's name: (its base, its layer), ("", "") for a reference-only one."""
    if not _name_table:
        found = {name: (base, layer) for name, base, layer in _escaper_names()}
        found.update(dict.fromkeys(_REFERENCE_ONLY, ("", "")))
        _name_table.update(found)
    return _name_table


_keeps: dict[tuple[type, Any], bool] = {}


def _keeps_reference(cls: type, twin: Twin) -> bool:
    """Whether *twin* keeps the reference escaper for *cls* (the Python twin; the C twin
    for a class it does not make): then the references are made at once."""
    key = (cls, twin)
    found = _keeps.get(key)
    if found is None:
        found = twin.contextual_escaper(cls, _probe, _stored_plan("text")) is _probe
        _keeps[key] = found
    return found


def _make(cls: type, twin: Twin, name: str, outputs: bool) -> Escaper:
    """The escaper *name* of :func:`build` (a KeyError for a name that is none)."""
    base_name, layer_name = _names()[name]
    if _keeps_reference(cls, twin):
        reference = _references_for(cls, twin)[name]
    else:
        resolved: list[Escaper] = []

        def lazy(value: Any) -> Any:
            if not resolved:
                resolved.append(_references_for(cls, twin)[name])
            return resolved[0](value)

        reference = _named(lazy, name)
    if not base_name:
        return reference
    if base_name in _UNPLANNED:
        return twin.contextual_escaper(cls, reference, None)
    if outputs and layer_name == "q":
        return twin.contextual_escaper(cls, reference, _stored_plan(name + _OUTPUT), True)
    return twin.contextual_escaper(cls, reference, _stored_plan(name))


_made_references: dict[tuple[type, Any], dict[str, Escaper]] = {}


def _references_for(cls: type, twin: Twin) -> dict[str, Escaper]:
    key = (cls, twin)
    found = _made_references.get(key)
    if found is None:
        found = _made_references.setdefault(key, references(cls, twin))
    return found


_built: dict[tuple[type, bool], dict[str, Escaper]] = {}


_one_made: dict[tuple[type, bool, str], Escaper] = {}


def one_for_class(cls: type, twin: Twin, name: str, outputs: bool = False) -> Escaper:
    """The escaper *name* of :func:`for_class`, made alone until that is made (a compiled
    template imports only the escapers it uses); a KeyError for a name that is none."""
    built = _built.get((cls, outputs))
    if built is not None:
        return built[name]
    key = (cls, outputs, name)
    found = _one_made.get(key)
    if found is None:
        found = _one_made.setdefault(key, _make(cls, twin, name, outputs))
    return found


def for_class(cls: type, twin: Twin, outputs: bool = False) -> dict[str, Escaper]:
    """:func:`build` for *cls*, once: compiled templates, t-strings and run-time
    formatting of one twin share its escapers (compiled templates its *outputs*)."""
    key = (cls, outputs)
    found = _built.get(key)
    if found is None:
        found = _built.setdefault(key, build(cls, twin, outputs))
    return found
