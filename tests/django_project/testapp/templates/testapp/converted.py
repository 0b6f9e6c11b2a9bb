"""A template module in plain Python, as `ptl-wsgi convert --to-py` writes one (without
t-strings, so that it runs on every supported Python)."""

from ptl_wsgi.html import html_join, htmltext
from ptl_wsgi.py_templates import template

from ..layout import page  # a .ptl template, imported by a .py one


@template("html")
def render(title, items):
    out = []
    out.append(htmltext("<h1>%s</h1><ul>") % title)
    out.extend([htmltext("<li>%s</li>") % item for item in items])
    out.append(htmltext("</ul>"))
    return html_join(out)


@template("html")
def framed(title):
    out = []
    out.append(page(title, render(title, [])))
    return html_join(out)


def helper(title):
    """Not marked: no template name reaches it."""
    return htmltext("<script>" + title + "</script>")


def stream(title):
    """A generator, not marked: in a .py module no template name reaches it either."""
    yield htmltext("<script>")
