"""The Form: a set of widgets read from one request, validated and rendered together."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ptl_wsgi.beyond_escaping import attrs as render_attributes
from ptl_wsgi.forms.adapters import csrf_policy, form_data
from ptl_wsgi.forms.csrf import CSRFPolicy, CSRFTokenWidget
from ptl_wsgi.forms.inputs import FormData
from ptl_wsgi.forms.widgets import (
    FileWidget,
    SubmitButton,
    ValidationError,
    Widget,
    merge_attrs,
)
from ptl_wsgi.html import htmltext

__all__ = ["Form"]

_EMPTY = htmltext("")


class Form:
    """An HTML form bound to one request.

    *request* is a werkzeug/Flask ``Request``, a Django ``HttpRequest``, a
    WSGI environ, a mapping or MultiDict of submitted values (taken as a POST,
    for tests), or None.  *csrf* is True (Django's or Flask's protection,
    detected from the request; ignored for GET forms), False, or a
    :class:`~ptl_wsgi.forms.csrf.CSRFPolicy` such as ``SessionCSRF``.

    Widgets are parsed lazily, on the first call that needs their values.
    """

    def __init__(
        self,
        request: Any = None,
        *,
        action: str = "",
        method: str = "post",
        csrf: bool | CSRFPolicy = True,
        id_prefix: str = "id_",
        attrs: Mapping[str, Any] | None = None,
    ) -> None:
        self.method = method.lower()
        if self.method not in ("get", "post"):
            raise ValueError(f"form method must be 'get' or 'post', not {method!r}")
        self.data: FormData = form_data(request, self.method)
        self.action = action
        self.id_prefix = id_prefix
        self.attrs = dict(attrs or {})
        self.widgets: dict[str, Widget] = {}
        #: Form-level error messages (not tied to one field).
        self.errors: list[str] = []
        self._validators: list[Callable[[Form], None]] = []
        self._processed = False
        if isinstance(csrf, CSRFPolicy):
            if self.method == "get":
                raise ValueError("CSRF tokens do not belong in GET forms (they would leak in URLs)")
            self.add(CSRFTokenWidget(csrf))
        elif csrf and self.method == "post":
            self.add(CSRFTokenWidget(csrf_policy(self.data)))

    # -- building --------------------------------------------------------------

    def add(self, widget: Widget | type[Widget], *args: Any, **kwargs: Any) -> Widget:
        """Add *widget* (an instance, or a class called with the other arguments).

        Returns the widget, e.g. ``form.add(TextWidget, "name", required=True)``.
        """
        if isinstance(widget, type):
            widget = widget(*args, **kwargs)
        elif args or kwargs:
            raise TypeError("arguments are only accepted with a widget class")
        if widget.name in self.widgets:
            raise ValueError(f"duplicate widget name {widget.name!r}")
        widget.set_id_prefix(self.id_prefix)
        self.widgets[widget.name] = widget
        if self._processed:
            widget.process(self.data)
        return widget

    def add_validator(self, validator: Callable[[Form], None]) -> None:
        """Add a form-level check, run after all fields parsed without error.

        It may raise :class:`ValidationError` (a form-level error) or call
        :meth:`add_error` for specific fields.
        """
        self._validators.append(validator)

    def add_error(self, message: str, field: str | None = None) -> None:
        """Record an error on *field*, or on the whole form (e.g. "name taken")."""
        self._ensure_processed()
        if field is None:
            self.errors.append(message)
        else:
            self.widgets[field].error = message

    def __getitem__(self, name: str) -> Widget:
        """The widget called *name*, with the submission already parsed."""
        self._ensure_processed()
        return self.widgets[name]

    def __contains__(self, name: object) -> bool:
        return name in self.widgets

    def __iter__(self) -> Iterator[Widget]:
        return iter(self.widgets.values())

    # -- processing ------------------------------------------------------------

    def is_submitted(self) -> bool:
        """POST forms: the request is a POST.  GET forms: any of its fields is present."""
        if self.method == "post":
            return self.data.method == "POST"
        return any(w.name in self.data for w in self.widgets.values())

    def _ensure_processed(self) -> None:
        if self._processed or not self.is_submitted():
            return
        self._processed = True
        for widget in self.widgets.values():
            widget.process(self.data)
        if not self.has_errors():
            for validator in self._validators:
                try:
                    validator(self)
                except ValidationError as exc:
                    self.errors.append(exc.message)

    def validate(self) -> bool:
        """True when the form was submitted and every field and check passed."""
        self._ensure_processed()
        return self._processed and not self.has_errors()

    def has_errors(self) -> bool:
        """Whether any field or form-level error was recorded."""
        self._ensure_processed()
        return bool(self.errors) or any(w.error for w in self.widgets.values())

    @property
    def values(self) -> dict[str, Any]:
        """Parsed values of the fields by name (None, or empty, where invalid)."""
        self._ensure_processed()
        return {w.name: w.value for w in self.widgets.values() if w.is_field}

    def get_submit(self) -> str | None:
        """The name of the submit button that was pressed, if any."""
        self._ensure_processed()
        for widget in self.widgets.values():
            if isinstance(widget, SubmitButton) and widget.value:
                return widget.name
        return None

    # -- rendering -------------------------------------------------------------

    def render_start(self) -> htmltext:
        """The ``<form>`` start tag."""
        self._ensure_processed()
        multipart = any(isinstance(w, FileWidget) for w in self.widgets.values())
        attrs = merge_attrs(
            self.attrs,
            {
                "method": self.method,
                "action": self.action,
                "enctype": "multipart/form-data" if multipart else None,
            },
        )
        # attrs() checks the action as a URL: a script URL becomes a harmless one.
        return htmltext("<form%s>\n") % render_attributes(attrs)

    def render_errors(self) -> htmltext:
        """Form-level errors and those of hidden widgets, as an alert list."""
        self._ensure_processed()
        messages = self.errors + [w.error for w in self.widgets.values() if w.is_hidden and w.error]
        if not messages:
            return _EMPTY
        items = _EMPTY.join(htmltext("<li>%s</li>") % m for m in messages)
        return htmltext(
            '<div class="form-errors" id="%sform-errors" role="alert"><ul>%s</ul></div>\n'
        ) % (
            self.id_prefix,
            items,
        )

    def render_widgets(self) -> htmltext:
        """The rows of all visible fields, in the order they were added."""
        self._ensure_processed()
        return _EMPTY.join(
            w.render()
            for w in self.widgets.values()
            if not w.is_hidden and not isinstance(w, SubmitButton)
        )

    def render_buttons(self) -> htmltext:
        """The submit buttons, in a ``<div class="buttons">``."""
        buttons = [w.render() for w in self.widgets.values() if isinstance(w, SubmitButton)]
        if not buttons:
            return _EMPTY
        return htmltext('<div class="buttons">%s</div>\n') % _EMPTY.join(buttons)

    def render_end(self) -> htmltext:
        """Hidden widgets (the CSRF token among them) and ``</form>``."""
        self._ensure_processed()
        hidden = _EMPTY.join(w.render() for w in self.widgets.values() if w.is_hidden)
        return hidden + htmltext("</form>\n")

    def render(self) -> htmltext:
        """The whole form."""
        return (
            self.render_start()
            + self.render_errors()
            + self.render_widgets()
            + self.render_buttons()
            + self.render_end()
        )

    def __html__(self) -> str:
        return str(self.render())
