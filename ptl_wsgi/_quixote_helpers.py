"""Quixote's HTML helpers (``href``, ``htmltag``, ``nl2br``, ...) and a few text filters.

Re-exported by :mod:`ptl_wsgi.html`; import them from there.  The
markup-producing helpers are methods of :class:`Helpers`, bound once to the
active htmltext twin, so that tests can hold both twins to the same rules.
Attributes are rendered by the policy of :func:`ptl_wsgi.beyond_escaping.attrs`
(:func:`ptl_wsgi.escaping.markup.attributes`) and nothing else.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Sized
from types import SimpleNamespace
from typing import Any

from ptl_wsgi.escaping.markup import attributes
from ptl_wsgi.escaping.rules import is_markup

__all__ = [
    "Helpers",
    "ValuelessAttr",
    "pluralize",
    "truncate",
]


class _Valueless:
    __slots__ = ()

    def __repr__(self) -> str:
        return "ValuelessAttr"


#: An ``htmltag`` attribute value meaning "the attribute's own name", as in
#: Quixote: ``htmltag("input", checked=ValuelessAttr)`` gives ``checked="checked"``.
ValuelessAttr: Any = _Valueless()

# A conservative tag name: letters, digits and the "-" of custom elements (and
# ":" "." "_" of XML names).  Anything else could end the tag or start another.
_TAG = re.compile(r"[A-Za-z][A-Za-z0-9:._\-]*\Z")
# The sequences that end or derail a <script> element when they occur in its text.
_SCRIPT_BREAKERS = re.compile(r"</|<!--")


class Helpers:
    """Quixote's ``quixote.html`` helpers, returning one twin's htmltext."""

    def __init__(self, twin: SimpleNamespace) -> None:
        self._htmltext = twin.htmltext
        self._htmlescape = twin.htmlescape
        self._stringify = twin.stringify
        self._escape = twin.escape_str

    def htmltag(self, tag: str, xml_end: bool = False, css_class: Any = None, **attrs: Any) -> Any:
        """``<tag attr="value" ...>`` (``<tag ... />`` with *xml_end*) as htmltext.

        *css_class* is the ``class`` attribute.  Values are escaped unless they
        are markup; ``None`` and ``False`` leave an attribute out, ``True`` gives
        a bare attribute, :data:`ValuelessAttr` repeats the name.  Rendering is
        :func:`ptl_wsgi.beyond_escaping.attrs`: URL attributes go through ``safe_url``,
        and an event handler (``on*``) or ``srcdoc`` is refused with ValueError
        unless its value is markup (``htmltext``) -- escaping does not make
        script safe.  Raises ValueError for an invalid tag or attribute name.
        """
        if not isinstance(tag, str) or _TAG.match(tag) is None:
            raise ValueError(f"invalid tag name {tag!r}")
        if css_class is not None:
            attrs["class"] = css_class
        mapping = {name: name if value is ValuelessAttr else value for name, value in attrs.items()}
        # attrs() refuses script attributes as a whole or allows them as a whole;
        # here a markup value is the author's own script.  So the untrusted
        # values are checked first (an omitted attribute holds no script).
        attributes(
            {
                name: value
                for name, value in mapping.items()
                if value is not None and value is not False and not is_markup(value)
            },
            self._escape,
        )
        rendered = attributes(mapping, self._escape, allow_events=True)
        return self._htmltext(f"<{tag}{rendered}{' />' if xml_end else '>'}")

    def href(self, url: Any, text: Any, title: Any = None, **attrs: Any) -> Any:
        """``<a href="url" title="title" ...>text</a>``, *text* escaped unless markup.

        The URL is checked like :func:`ptl_wsgi.beyond_escaping.safe_url`: a script scheme
        gives :data:`~ptl_wsgi.beyond_escaping.UNSAFE_URL`.  Other attributes as in
        :meth:`htmltag`.
        """
        tag = self.htmltag("a", href=url, title=title, **attrs)
        return self._htmltext(f"{tag}{self._htmlescape(text)}</a>")

    def url_quote(self, value: Any, fallback: str | None = None) -> str:
        """*value* (``str()``-ed; bytes as they are) percent-quoted for a URL, ``/`` kept; a str.

        For ``None``, returns *fallback* unquoted, or raises ValueError if there
        is none.  The result has no character HTML would need escaped.
        """
        if value is None:
            if fallback is None:
                raise ValueError("value is None and no fallback supplied")
            return fallback
        if isinstance(value, (bytes, bytearray)):
            return urllib.parse.quote(value)  # the bytes themselves, as in Quixote
        return urllib.parse.quote(self._stringify(value))

    def url_with_query(self, path: Any, **attrs: Any) -> Any:
        """*path* quoted, with ``?key=value&...`` for *attrs* sorted by key, as htmltext.

        Keys and values are quoted with :meth:`url_quote` (a ``None`` value
        raises ValueError); the ``&`` separators are escaped, as in an attribute.
        """
        url = self.url_quote(path)
        if attrs:
            query = "&".join(
                f"{self.url_quote(key)}={self.url_quote(value)}"
                for key, value in sorted(attrs.items())
            )
            url = f"{url}?{query}"
        # Quoting leaves only "&" for HTML to escape.
        return self._htmlescape(url)

    def nl2br(self, value: Any) -> Any:
        """*value* escaped (unless markup), with ``<br />`` before each ``\\n``."""
        return self._htmltext(str(self._htmlescape(value)).replace("\n", "<br />\n"))

    def js_escape(self, s: Any) -> Any:
        """Trusted JavaScript *code* made safe to write inside ``<script>``, as htmltext.

        ``</`` becomes ``<\\/`` and ``<!--`` becomes ``<\\!--``: inside a JavaScript
        string both mean the same, and neither can end or derail the element.
        Nothing else changes, so *s* must be code you wrote: a value in a string
        literal can still close the quotes.  For data, use
        :func:`ptl_wsgi.beyond_escaping.json_script`.
        """
        code = self._stringify(s)
        return self._htmltext(_SCRIPT_BREAKERS.sub(lambda m: m.group().replace("<", "<\\"), code))


def truncate(value: Any, length: int, end: str = "…") -> str:
    """*value* (``str()``-ed) cut to at most *length* characters, *end* included.

    Cuts after the last whole word that fits, when there is one.  Returns a
    plain str, escaped on output.  Raises TypeError for markup, which cannot
    be cut without cutting a tag or an entity.
    """
    if is_markup(value):
        raise TypeError("truncate() cuts text, not markup; pass the text before marking it up")
    if length < len(end):
        raise ValueError(f"length {length} leaves no room for end={end!r}")
    text = str(value)
    if len(text) <= length:
        return text
    cut = text[: length - len(end)]
    if cut and not cut[-1].isspace() and not text[len(cut)].isspace():
        # The cut falls inside a word: drop that word, unless it is the only one.
        words = cut.rsplit(None, 1)
        if len(words) == 2:
            cut = words[0]
    return cut.rstrip() + end


def pluralize(count: int | Sized, singular: str = "", plural: str = "s") -> str:
    """*singular* if *count* (a number, or anything with a length) is 1, else *plural*.

    ``f"{n} book{pluralize(n)}"``, ``f"{n} repl{pluralize(n, 'y', 'ies')}"``.
    English-only; translated text wants ``ngettext``, whose plural rules are
    per language.
    """
    n = len(count) if isinstance(count, Sized) else count
    return singular if n == 1 else plural
