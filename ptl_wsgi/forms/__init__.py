"""Forms that escape everything they render.

Build a :class:`Form` from a request (werkzeug/Flask, Django, a WSGI environ
or a plain mapping), add widgets, call :meth:`Form.validate`, and render it
whole (``form.render()``) or piece by piece in a PTL template.  See
``docs/forms.md``.
"""

from __future__ import annotations

from ptl_wsgi.forms.csrf import (
    CSRFPolicy,
    CSRFTokenWidget,
    DjangoCSRF,
    FlaskCSRF,
    SessionCSRF,
)
from ptl_wsgi.forms.form import Form
from ptl_wsgi.forms.inputs import FormData, UploadedFile, form_data
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
