"""The rule tables of escaping, each written once.

Every other room asks these: the context engine (which attribute holds a URL,
which scheme runs script), the escapers (which characters JSON may not hold
in a page, which bases leave an int's digits alone), ``beyond_escaping`` (``safe_url``,
``attrs``, ``json_script``), the compiler and the output policy ("is this
markup", "is this a t-string").  ``tests/escaping/test_escaping_rules.py`` fails if a
rule is spelled anywhere else.

Plain data and small functions only: no regular expressions are compiled here
(the modules that match text build theirs from these tables), so importing
this module costs a cached render nothing.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "CSS_LOADING_FUNCTIONS",
    "CSS_UNSAFE_WORDS",
    "DEFAULT_SCHEMES",
    "INT_SAFE_BASES",
    "JSON_UNSAFE",
    "K_CSS",
    "K_HTML",
    "K_JS",
    "K_PLAIN",
    "K_SRCSET",
    "K_URL",
    "K_URL_LIST",
    "MARKUP_AS_VALUE_BASES",
    "MARKUP_ESCAPED_LAYERS",
    "NONCE_ATTRIBUTE",
    "NONCE_ELEMENTS",
    "NONCE_LINK_RELS",
    "RASTER_IMAGE_TYPES",
    "SCRIPT_SCHEMES",
    "SPACE_SEPARATED_URL_ATTRIBUTES",
    "SRCSET_ATTRIBUTES",
    "UNSAFE_CSS",
    "UNSAFE_URL",
    "URL_ATTRIBUTES",
    "URL_LIST_ATTRIBUTES",
    "URL_START_BASES",
    "attribute_kind",
    "is_items",
    "is_json_markup",
    "is_markup",
    "is_template",
    "takes_nonce",
]

# -- URLs ---------------------------------------------------------------------------

#: Schemes whose URL runs script or renders a document the attacker chose: a value
#: may never make one, and no allow-list of ``safe_url`` may name one.  (``data:`` is
#: allowed only as a raster image, below.)
SCRIPT_SCHEMES = frozenset({"javascript", "vbscript", "livescript", "data", "blob"})

#: The ``data:image/...`` types that cannot carry script (SVG can): a literal
#: ``data:`` URL of one of them is an image, and ``safe_url(allow_data_images=True)``
#: keeps a base64 one.
RASTER_IMAGE_TYPES = ("png", "gif", "jpeg", "jpg", "webp", "avif", "bmp", "x-icon")

#: The schemes ``safe_url`` accepts unless told otherwise.
DEFAULT_SCHEMES: tuple[str, ...] = ("http", "https", "mailto", "tel")

#: What a refused URL becomes: it goes nowhere, and the fragment makes the refusal
#: easy to spot in a page or a log.
UNSAFE_URL = "about:invalid#ptl-unsafe-url"

# -- attributes -----------------------------------------------------------------------

# The kinds of attribute value: what the engine parses a value as.
K_PLAIN, K_URL, K_SRCSET, K_JS, K_CSS, K_HTML = "plain", "url", "srcset", "js", "css", "html"
K_URL_LIST = "url_list"

#: Attributes (by their local name: ``xlink:href`` counts as ``href``) whose value is
#: a URL; ``xmlns`` and ``xmlns:*`` too.
URL_ATTRIBUTES = frozenset(
    {
        "action", "archive", "attributionsrc", "background", "base", "by", "cite",
        "classid", "codebase", "data", "dynsrc", "formaction", "from", "href", "icon",
        "itemid", "itemtype", "longdesc", "lowsrc", "manifest", "ping", "poster",
        "profile", "src", "to", "usemap", "xmlns",
    }
)  # fmt: skip

#: Comma-separated lists of image candidates (a URL and a descriptor each).
SRCSET_ATTRIBUTES = frozenset({"srcset", "imagesrcset"})

#: URL attributes whose value is a space-separated list of URLs.
SPACE_SEPARATED_URL_ATTRIBUTES = frozenset({"archive", "ping"})

#: SVG animation ``values``: ``;``-separated, and any item may set a link's URL.
URL_LIST_ATTRIBUTES = frozenset({"values"})

# Attributes that a JavaScript framework evaluates as code after the browser decoded
# them (so HTML escaping does not protect them): htmx's hx-on*, the event filters of
# hx-trigger, hx-vals and hx-headers ("js:" ones), hx-vars; hyperscript's "_"; Vue's v-*
# with its @ and : shorthands (Alpine's too), AngularJS's ng-*, Knockout's data-bind
# (data- is dropped first), and Alpine's directives that take an expression.
_FRAMEWORK_CODE_PREFIXES = (
    "@", ":", "hx-on", "hx-trigger", "hx-vals", "hx-headers", "hx-vars", "v-", "ng-", "ng:", "ng_"
)  # fmt: skip
_ALPINE_CODE = frozenset(
    "data init show bind on text html model modelable for effect if id".split()
)
_FRAMEWORK_CODE_NAMES = frozenset({"bind", "_"})


def _framework_code(name: str) -> bool:
    if name.startswith(_FRAMEWORK_CODE_PREFIXES) or name in _FRAMEWORK_CODE_NAMES:
        return True
    if not name.startswith("x-"):
        return False
    directive = name[2:]
    for cut in (":", "."):
        directive = directive.partition(cut)[0]
    return directive in _ALPINE_CODE


def attribute_kind(name: str) -> str:
    """The kind of attribute *name* (``K_*``): what its value is parsed as.

    Event handlers (``on*``, by the full or the local name) and the attributes
    frameworks run as code are ``K_JS``; ``style`` is CSS, ``srcdoc`` a document;
    a name that speaks of a URL (``src``, ``uri``, ``url`` in it) is taken for one,
    as Go does: the strictest kind that fits.
    """
    name = name.lower()
    if name.startswith("data-"):
        name = name[5:]  # data-href is a URL to the scripts that read it
    if _framework_code(name):
        return K_JS
    local = name.rpartition(":")[2]
    if name.startswith("on") or local.startswith("on"):
        return K_JS
    if local == "style":
        return K_CSS
    if local == "srcdoc":
        return K_HTML
    if local in SRCSET_ATTRIBUTES:
        return K_SRCSET
    if local in URL_LIST_ATTRIBUTES:
        return K_URL_LIST
    if local in URL_ATTRIBUTES or name.startswith("xmlns"):
        return K_URL
    if "src" in local or "uri" in local or "url" in local:
        return K_URL
    return K_PLAIN


# -- Content-Security-Policy nonces -------------------------------------------------------

#: The attribute a strict CSP checks: a start tag that has it (in the literal) keeps it.
NONCE_ATTRIBUTE = "nonce"

#: Elements whose start tag, written by a literal, gets the request's nonce inside a
#: nonce scope (``<script>``, inline or ``src``; ``<style>``), in HTML and in SVG.
NONCE_ELEMENTS = frozenset({"script", "style"})

#: ``<link rel=...>`` types whose fetch a policy checks against the nonce: a
#: stylesheet (``style-src``), a preload (its ``as``'s directive) and a module
#: preload (``script-src``).  Only a literal ``rel`` counts: a value never decides
#: whether a tag gets the nonce.
NONCE_LINK_RELS = frozenset({"stylesheet", "preload", "modulepreload"})


def takes_nonce(element: str, rel: str | None = None) -> bool:
    """Whether a start tag of *element* (lowercase) gets the nonce; for ``link``,
    *rel* is its literal ``rel`` value (None: no ``rel``, or one a value gave)."""
    if element in NONCE_ELEMENTS:
        return True
    if element != "link" or rel is None:
        return False
    return any(word in NONCE_LINK_RELS for word in rel.lower().split())


# -- characters ---------------------------------------------------------------------------

#: Characters written as ``\\uXXXX`` in JSON that goes into a page: ``<`` and ``>``
#: could make ``</script`` or ``<!--``, ``&`` a reference if the text is ever read as
#: HTML, U+2028/U+2029 end a line in old JavaScript, lone surrogates cannot be
#: encoded.  (JS values add ``/``: see ``escaping.js``.)
JSON_UNSAFE = "<>&\u2028\u2029\ud800-\udfff"

#: What the CSS filter outputs instead of a value that could leave a CSS value; an
#: identifier no stylesheet uses, so that it is visible and harmless.
UNSAFE_CSS = "ZptlZ"

#: Words CSS may not hold where a value goes: each loads a resource or runs code in
#: some browser (``url(``, ``@import``, IE's ``expression()``, ``behavior``, ``binding``).
CSS_UNSAFE_WORDS = ("expression", "binding", "behavior", "url", "import")

#: CSS functions that load a resource: a whole ``style`` value given to ``attrs``
#: may not call them.
CSS_LOADING_FUNCTIONS = ("url", "image", "image-set", "cross-fade", "element", "src")

# -- values ---------------------------------------------------------------------------------

#: Escapers (by base name, without their HTML layer) whose output for a non-negative
#: int is its digits: the int goes out as it is, formatted by the join.
INT_SAFE_BASES = frozenset(
    {
        "text", "url", "url_path", "url_slash", "url_query", "srcset", "url_list",
        "js_string", "json_string", "css", "css_string", "srcdoc",
    }
)  # fmt: skip


#: Escapers (by base name) that take a URL's start: a markup value there still has its
#: scheme checked (markup made for text escaped its own values for text only).
URL_START_BASES = frozenset({"url", "url_list", "srcset"})

#: Escapers (by base name) where a markup value is a value like any other, its text
#: escaped: the languages of a script and a style (JavaScript, JSON, CSS, and their
#: comments, where a value is dropped).  Markup is trusted as *HTML*; HTML escaping
#: means nothing there, and Django's ``format_html`` makes every argument markup, so
#: trusting it as code would run what a user gave.  Elsewhere markup is kept (a URL's
#: start still has its scheme checked: :data:`URL_START_BASES`).
MARKUP_AS_VALUE_BASES = frozenset(
    {"js_value", "json_value", "js_string", "json_string", "js_regexp", "css", "css_string", "drop"}
)

#: Layers (of an escaper's name: ``u`` an unquoted attribute value, ``u0`` its start)
#: where markup kept as markup is escaped all the same, but for its character references:
#: markup's own escaping was made for text, and a space, ``=`` or ``>`` in it (which
#: ``format_html`` leaves) would end the value and add an attribute.
MARKUP_ESCAPED_LAYERS = frozenset({"u", "u0"})


def is_markup(value: Any) -> bool:
    """Whether *value* is trusted markup: it has ``__html__`` (the protocol of
    markupsafe, Django and Jinja2; the twins ask the same in C and Python).

    A class that defines ``__html__`` (``Markup`` itself, not an instance) counts
    too, so it fails the visible way everywhere: calling its unbound ``__html__``
    raises TypeError, in the escapers as in ``htmlescape``.
    """
    return getattr(value, "__html__", None) is not None


def is_json_markup(value: Any) -> bool:
    """Whether *value* is JSON text made for a page by the project's encoder
    (``escaping.js.JSONMarkup``, the ``tojson`` filter's): the one markup that a script
    takes as it is, where a JavaScript or JSON value goes.  Its class says so."""
    return getattr(type(value), "__ptl_json__", False) is True


_ITEMS = (list, tuple, type(_ for _ in ()))


def is_items(value: Any) -> bool:
    """Whether *value* renders as its items joined in a t-string (``htmlformat``): a
    list, tuple or generator (exactly: not a subclass such as a named tuple), as JSX
    and tdom render arrays and iterables."""
    return type(value) in _ITEMS


_TEMPLATE_CLASSES: list[type] = []  # (found by name: string.templatelib imports re)


def is_template(value: Any) -> bool:
    """Whether *value* is a PEP 750 t-string (``string.templatelib.Template``)."""
    cls = type(value)
    if cls in _TEMPLATE_CLASSES:
        return True
    # (A type's __module__ is made anew at each read: the class is remembered.)
    if cls.__name__ == "Template" and cls.__module__ in ("string.templatelib", "templatelib"):
        _TEMPLATE_CLASSES.append(cls)
        return True
    return False
