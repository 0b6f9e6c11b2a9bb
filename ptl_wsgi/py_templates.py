"""Templates in plain Python: the ``@template`` marker.

A function marked ``@template("html")`` (or ``"plain"``) is a template to the
loader, and so to the Flask and Django integrations, exactly as a ``def f
[html]`` in a ``.ptl`` module is: names of ``.py`` files in the template
folders (``"blog/post.py"``, ``"blog/post.py:sidebar"``) resolve only to
functions marked so.  The marker changes nothing else: the function does its
own escaping, typically with t-strings through
:func:`ptl_wsgi.html.htmlformat` and an explicit output list, as
``ptl-wsgi convert --to-py`` writes it::

    from ptl_wsgi.html import html_join, htmlformat
    from ptl_wsgi.py_templates import template

    @template("html")
    def item(name, price):
        out = []
        out.append(htmlformat(t"<li>{name}: {price:.2f}</li>"))
        return html_join(out)

The marker works on every supported Python (3.10+); t-strings need 3.14.
Importing this module is as cheap as importing a compiled ``.ptl`` module.
"""

from __future__ import annotations

from ptl_wsgi._runtime import mark_html_template, mark_plain_template

# Not typing.TYPE_CHECKING: a converted module imports this one, and typing costs time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    _F = TypeVar("_F", bound=Callable[..., Any])

__all__ = ["KINDS", "template"]

#: The kinds of template, as the compiler names them: ``def f [html]``, ``def f [plain]``.
KINDS = ("html", "plain")

_MARKERS = {"html": mark_html_template, "plain": mark_plain_template}


def template(kind: str = "html") -> Callable[[_F], _F]:
    """Mark a function as a template of *kind* (``"html"`` or ``"plain"``).

    It sets ``function.__ptl_template__`` and returns the function itself: no
    wrapper, no cost per call.  Put it innermost (nearest the ``def``), as the
    compiler puts its own mark, so that it marks the function itself.
    """
    if callable(kind):
        raise TypeError('use @template("html") or @template("plain"), with the kind')
    try:
        return _MARKERS[kind]
    except (KeyError, TypeError):
        raise ValueError(f"template kind must be 'html' or 'plain', not {kind!r}") from None
