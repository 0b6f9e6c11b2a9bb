"""Forms shared by the forms tests: hostile values, a form with every widget, a PTL page.

A helper module, not a test module, so that test_forms, test_forms_frameworks,
test_forms_properties and the child processes import it under one name.
"""

from __future__ import annotations

import re
import textwrap

from ptl_wsgi.forms import (
    CheckboxWidget,
    DateWidget,
    DecimalWidget,
    EmailWidget,
    FileWidget,
    Form,
    HiddenWidget,
    IntWidget,
    MultipleSelectWidget,
    PasswordWidget,
    RadioButtonsWidget,
    SelectWidget,
    SubmitButton,
    TextAreaWidget,
    TextWidget,
)
from ptl_wsgi.html import htmltext

HOSTILE = ['"><script>alert(1)</script>', "' onfocus='alert(1)", "</textarea><script>x</script>"]
# Every tag the forms package emits; anything else starting with "<" is injected.
OUR_TAGS = re.compile(
    r"</?(?:form|div|label|input|p|select|option|textarea|fieldset|legend|button|ul|li)\b[^<>]*>"
)


TAG = re.compile(r'</?[a-z]+(?: [a-z-]+(?:="[^"<>]*")?)*>')


def assert_no_injection(html: str) -> None:
    """No markup in *html* but the tags forms render, and no attribute breaks out."""
    leftover = OUR_TAGS.sub("", html)
    assert "<" not in leftover and ">" not in leftover, leftover
    for tag in re.findall(r"<[^<>]*>", html):
        assert TAG.fullmatch(tag), tag
    assert "onfocus='" not in html


def everything(form: Form) -> Form:
    """Add one widget of every kind to *form*."""
    form.add(TextWidget, "text", required=True, hint="Your name")
    form.add(PasswordWidget, "password")
    form.add(HiddenWidget, "hidden")
    form.add(TextAreaWidget, "textarea")
    form.add(CheckboxWidget, "checkbox")
    form.add(RadioButtonsWidget, "radio", options=[("a", "Apple"), ("b", "Banana")])
    form.add(SelectWidget, "select", options=["x", "y"], placeholder="Choose")
    form.add(MultipleSelectWidget, "multi", options=[1, 2, 3])
    form.add(IntWidget, "int", min=0, max=10)
    form.add(DecimalWidget, "decimal", places=2)
    form.add(EmailWidget, "email")
    form.add(DateWidget, "date")
    form.add(FileWidget, "file", max_size=10)
    form.add(SubmitButton, "save", "Save")
    return form


PAGE_PTL = textwrap.dedent(
    """
    def page [html] (form):
        "<main>"
        form.render_start()
        form.render_errors()
        name = form["name"]
        '<div class="my-row">'
        name.render_label()
        name.render_control()
        name.render_error()
        "</div>"
        form["email"].render()
        form.render_buttons()
        form.render_end()
        "</main>"
    """
)


def page_form() -> Form:
    form = Form({"name": HOSTILE[0], "email": HOSTILE[1]}, csrf=False)
    form.add(TextWidget, "name", max_length=5)
    form.add(EmailWidget, "email")
    form.add(SubmitButton, "go", "Go")
    return form


def check_page(html: htmltext) -> None:
    assert isinstance(html, htmltext)
    assert html.startswith('<main><form method="post" action="">')
    assert '<div class="my-row"><label for="id_name">Name</label><input type="text"' in html
    assert "at most 5 characters" in html and "valid e-mail" in html
    assert_no_injection(str(html).replace("<main>", "").replace("</main>", ""))


MALFORMED_TOKENS = [
    "a." + "9" * 400 + ".b",  # a float cannot hold the timestamp: once an OverflowError
    "a." + "9" * 5000 + ".b",  # more digits than int() converts by default
    "a.-1.b",
    "a.+1.b",
    "a. 1.b",
    "a.1_0.b",
    "a.\u0661\u0662.b",  # Arabic-Indic digits: str.isdigit() says yes
    "a.\u00b2.b",  # superscript two: isdigit() yes, int() no
    "a.1.b.c",
    "a..b",
    "...",
    "",
    "\udcff.1.x",
    "tök.1.x",
    "a.1." + "f" * 64,
]
