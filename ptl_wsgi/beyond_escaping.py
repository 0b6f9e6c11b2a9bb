"""Helpers for the places where HTML escaping alone is not enough.

The rules are the escaping engine's (:mod:`ptl_wsgi.escaping`); this module
gives them as markup of the active htmltext twin.

Escaping makes text inert in element content and in quoted attribute values.
It does nothing for what a value *means* once it is there: an escaped
``javascript:alert(1)`` is still a script URL in an ``href``, an escaped
``alert(1)`` is still a script in an ``onclick``, and escaping is the wrong
encoding inside ``<script>``.  This module covers those cases:

* :func:`safe_url` -- a URL for ``href``/``src``/``action``, with script
  schemes replaced by :data:`UNSAFE_URL`;
* :func:`attrs` -- a dict rendered as attributes, refusing invalid names and
  event handlers, sending URL-valued attributes through :func:`safe_url`;
* :func:`json_script` -- data for scripts, as JSON in a
  ``<script type="application/json">`` element.

Its name before 0.2, ``ptl_wsgi.safety``, still imports (deprecated), with the
CSP nonce names of :mod:`ptl_wsgi.csp`, which it re-exported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ptl_wsgi.escaping import rules
from ptl_wsgi.escaping.js import json_text
from ptl_wsgi.escaping.markup import attributes
from ptl_wsgi.escaping.rules import DEFAULT_SCHEMES, UNSAFE_URL
from ptl_wsgi.escaping.url import is_safe_url, url_text
from ptl_wsgi.html import escape_str, htmlescape, htmltext

__all__ = [
    "DEFAULT_SCHEMES",
    "UNSAFE_URL",
    "URL_ATTRIBUTES",
    "attrs",
    "is_safe_url",
    "json_script",
    "safe_url",
]

#: Attributes whose value is a URL or a list of URLs (by local name: ``xlink:href``
#: counts as ``href``); :func:`attrs` sends their values through :func:`safe_url`,
#: as it does for any name that speaks of a URL (``data-src``, ``imageuri``).
URL_ATTRIBUTES: frozenset[str] = (
    rules.URL_ATTRIBUTES | rules.SRCSET_ATTRIBUTES | rules.URL_LIST_ATTRIBUTES
)


def safe_url(
    value: Any, *, schemes: Iterable[str] = DEFAULT_SCHEMES, allow_data_images: bool = False
) -> htmltext:
    """*value* as an escaped URL for a quoted ``href``, ``src`` or ``action`` value.

    Relative URLs (``/a``, ``a/b``, ``?q``, ``#f``, ``//host/path``) are kept.
    A URL with a scheme is kept only if the scheme is in *schemes*
    (``http``, ``https``, ``mailto`` and ``tel`` by default); with
    *allow_data_images*, base64 ``data:`` URLs of raster images are kept too.
    Everything else becomes :data:`UNSAFE_URL`, a harmless ``about:`` URL,
    rather than raising, so an attacker's input cannot break the page.

    The scheme is judged after the normalisations that browsers apply and
    then some: character references decoded (repeatedly), tabs, newlines,
    control characters and spaces removed anywhere, case ignored.  A value
    with ``__html__`` is taken as markup and decoded once.  ``javascript``,
    ``vbscript``, ``livescript``, ``data`` and ``blob`` can never be put in
    *schemes*.
    """
    url = url_text(value)
    if not is_safe_url(url, schemes=schemes, allow_data_images=allow_data_images):
        return htmltext(UNSAFE_URL)
    return htmlescape(url)


def attrs(mapping: Mapping[str, Any], *, allow_events: bool = False) -> htmltext:
    """Render *mapping* as attributes: ``' name="value"'`` each, in order.

    ``True`` renders a bare attribute, ``False`` and ``None`` leave it out;
    values with ``__html__`` (markup) are trusted as attribute source text
    (only a ``"`` in them is escaped), anything else is ``str()``-ed and
    escaped.  Values of URL attributes (:data:`URL_ATTRIBUTES`, and names
    that speak of a URL) go through :func:`safe_url` (each URL of ``srcset``,
    ``ping`` and the like); a ``style`` value that is not markup is left out
    if it could load a resource or run code (``url(``, ``expression``,
    ``@import``, CSS escapes, ...).

    Raises ValueError for a name outside the HTML attribute-name grammar, a
    name given twice (ignoring case), or a script attribute whose value is
    not markup, unless *allow_events* is true: event handlers (``on*``),
    ``srcdoc``, and the attributes JavaScript frameworks run as code
    (``hx-on*``, ``x-data``, ``v-on``, ``@click``, ``:href``, ``ng-*``...),
    which escaping does not make safe.
    """
    return htmltext(attributes(mapping, escape_str, allow_events))


def json_script(value: Any, element_id: str | None = None, nonce: str | None = None) -> htmltext:
    """*value* as JSON in a ``<script type="application/json">`` element.

    Read it back in the page with
    ``JSON.parse(document.getElementById(element_id).textContent)``.
    ``<``, ``>``, ``&``, U+2028, U+2029 and lone surrogates are written as
    ``\\uXXXX`` escapes, so no value can close the element or open a comment.
    Raises TypeError for values that JSON cannot represent and ValueError
    for NaN and infinities, which JSON.parse would reject.
    """
    attributes_ = attrs({"type": "application/json", "id": element_id, "nonce": nonce})
    return htmltext(f"<script{attributes_}>{json_text(value)}</script>")
