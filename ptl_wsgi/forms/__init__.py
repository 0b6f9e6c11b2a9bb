"""Forms that escape everything they render.

Build a :class:`Form` from a request (werkzeug/Flask, Django, a WSGI environ
or a plain mapping), add widgets, call :meth:`Form.validate`, and render it
whole (``form.render()``) or piece by piece in a PTL template.  See
``docs/forms.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ptl_wsgi.forms.adapters import form_data
from ptl_wsgi.forms.csrf import CSRFPolicy, CSRFTokenWidget, SessionCSRF
from ptl_wsgi.forms.form import Form
from ptl_wsgi.forms.inputs import FormData, UploadedFile
from ptl_wsgi.forms.widgets import (
    CheckboxWidget,
    DateWidget,
    DecimalWidget,
    EmailWidget,
    FileWidget,
    HiddenWidget,
    IntWidget,
    MultipleSelectWidget,
    Option,
    PasswordWidget,
    RadioButtonsWidget,
    SelectWidget,
    SubmitButton,
    TextAreaWidget,
    TextWidget,
    ValidationError,
    Widget,
)

__all__ = [
    "CSRFPolicy",
    "CSRFTokenWidget",
    "CheckboxWidget",
    "DateWidget",
    "DecimalWidget",
    "DjangoCSRF",
    "EmailWidget",
    "FileWidget",
    "FlaskCSRF",
    "Form",
    "FormData",
    "HiddenWidget",
    "IntWidget",
    "MultipleSelectWidget",
    "Option",
    "PasswordWidget",
    "RadioButtonsWidget",
    "SelectWidget",
    "SessionCSRF",
    "SubmitButton",
    "TextAreaWidget",
    "TextWidget",
    "UploadedFile",
    "ValidationError",
    "Widget",
    "form_data",
]

if TYPE_CHECKING:
    from ptl_wsgi.contrib.forms_django import DjangoCSRF
    from ptl_wsgi.contrib.forms_flask import FlaskCSRF

# The frameworks' policies live with their adapters in contrib; importing one imports
# its framework, so only on first use of the name (PEP 562).
_FRAMEWORK_NAMES = {
    "DjangoCSRF": "ptl_wsgi.contrib.forms_django",
    "FlaskCSRF": "ptl_wsgi.contrib.forms_flask",
}


def __getattr__(name: str) -> Any:
    module = _FRAMEWORK_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
