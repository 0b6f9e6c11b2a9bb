"""Widgets: one form control each, parsing its own input and rendering itself.

Every ``render*`` method returns :class:`~ptl_wsgi.html.htmltext` built with
htmltext operations, so labels, hints, options, values and error messages are
escaped unless they already are htmltext.  Attributes, the caller's and ours,
are all rendered by :func:`ptl_wsgi.beyond_escaping.attrs`: URLs checked, event
handlers refused unless given as markup.

Input rules shared by all widgets:

* a single-value widget submitted more than once gets a field error (it is
  never silently resolved to the first or the last value);
* bytes must be valid UTF-8, and text may not contain lone surrogates or
  control characters other than tab, CR and LF;
* text longer than the widget's ``max_length`` is an error;
* an empty value counts as missing; validators run only on non-empty values.
"""

from __future__ import annotations

import datetime
import decimal
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, TypeVar

from ptl_wsgi.beyond_escaping import attrs as render_attributes
from ptl_wsgi.forms.inputs import FormData, UploadedFile
from ptl_wsgi.html import htmltext

_Number = TypeVar("_Number", int, decimal.Decimal)

__all__ = [
    "CheckboxWidget",
    "DateWidget",
    "DecimalWidget",
    "EmailWidget",
    "FileWidget",
    "HiddenWidget",
    "IntWidget",
    "MultipleSelectWidget",
    "Option",
    "PasswordWidget",
    "RadioButtonsWidget",
    "SelectWidget",
    "SubmitButton",
    "TextAreaWidget",
    "TextWidget",
    "ValidationError",
    "Validator",
    "Widget",
]

Validator = Callable[[Any], None]

_EMPTY = htmltext("")
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
# Characters that cannot be shown back safely: C0 controls except tab, LF and
# CR, DEL, lone surrogates (they would make the UTF-8 response unencodable)
# and the two noncharacters.
_BAD_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


class ValidationError(Exception):
    """Raised by parsing and by validators; *message* is shown escaped unless htmltext."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def merge_attrs(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Merge attribute mappings, later ones winning, names compared ignoring case.

    HTML names ignore case, so a caller's ``"TYPE"`` must be replaced by our
    ``"type"``, not rendered beside it (a browser keeps the first of two).
    An attribute keeps the place where its name first appeared.
    """
    merged: dict[str, tuple[str, Any]] = {}
    for layer in layers:
        for name, value in layer.items():
            merged[name.lower() if isinstance(name, str) else name] = (name, value)
    return dict(merged.values())


def _display(value: Any) -> str:
    """Submitted *value* as text that can always be shown back (never raises)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    elif isinstance(value, (int, float, decimal.Decimal)):
        value = str(value)
    elif not isinstance(value, str):
        return ""
    return _BAD_CHARS.sub("\ufffd", value)


class Widget:
    """Base class: a named control with a label, hint, validators and an error.

    After the form is processed, ``value`` holds the parsed value (None, or
    the widget's empty value, when missing or invalid) and ``error`` the
    message, if any.
    """

    kind: ClassVar[str] = "widget"
    #: False for buttons and the CSRF token: not part of ``Form.values``.
    is_field: ClassVar[bool] = True
    #: True for widgets without a visible row; their errors go to the form.
    is_hidden: ClassVar[bool] = False
    #: Checkboxes put their label after the control.
    label_after: ClassVar[bool] = False
    max_length: int | None = 1000
    empty_value: ClassVar[Any] = None
    messages: ClassVar[dict[str, str]] = {
        "required": "This field is required.",
        "repeated": "This field was submitted more than once.",
        "encoding": "This value is not valid UTF-8 text.",
        "type": "This value has an unsupported type.",
        "chars": "This value contains characters that are not allowed.",
        "too_long": "This value is too long (at most %d characters).",
    }

    def __init__(
        self,
        name: str,
        value: Any = None,
        *,
        label: str | None = None,
        hint: str | None = None,
        required: bool = False,
        validators: Iterable[Validator] = (),
        attrs: Mapping[str, Any] | None = None,
        id: str | None = None,
        max_length: int | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("a widget needs a non-empty str name")
        self.name = name
        self.initial = value
        self.value = value
        self.label = label if label is not None else name.replace("_", " ").capitalize()
        self.hint = hint
        self.required = required
        self.validators = list(validators)
        self.attrs = dict(attrs or {})
        self._auto_id = id is None
        self.id = id or "id_" + _ID_UNSAFE.sub("_", name)
        if max_length is not None:
            self.max_length = max_length
        self.error: str | None = None
        #: True once the widget has parsed a submission.
        self.processed = False
        #: What was submitted, cleaned for display; None when nothing was.
        self.submitted: str | None = None

    def set_id_prefix(self, prefix: str) -> None:
        """Derive the id from *prefix* and the name, unless an id was given."""
        if self._auto_id:
            self.id = prefix + _ID_UNSAFE.sub("_", self.name)

    # -- parsing ---------------------------------------------------------------

    def process(self, data: FormData) -> None:
        """Parse this widget's part of *data*, setting ``value`` and ``error``."""
        self.processed = True
        self.error = None
        try:
            value = self.extract(data)
            if self.is_empty(value):
                value = self.empty_value
                if self.required:
                    raise ValidationError(self.messages["required"])
            else:
                for validator in self.validators:
                    validator(value)
        except ValidationError as exc:
            self.error = exc.message
            value = self.empty_value
        self.value = value

    def is_empty(self, value: Any) -> bool:
        """Whether *value* counts as missing for ``required``."""
        return value is None

    def extract(self, data: FormData) -> Any:
        """Return the parsed value from *data*; raise ValidationError when invalid."""
        values = data.getlist(self.name)
        if values:
            self.submitted = _display(values[0])
        if len(values) > 1:
            raise ValidationError(self.messages["repeated"])
        if not values:
            return None
        text = self.check_text(values[0])
        if text == "":
            return None
        return self.convert(text)

    def check_text(self, value: object) -> str:
        """Decode and vet one submitted value; return it as clean text."""
        if isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                raise ValidationError(self.messages["encoding"]) from None
        elif isinstance(value, (int, float, decimal.Decimal)):
            value = str(value)
        elif not isinstance(value, str):
            raise ValidationError(self.messages["type"])
        if self.max_length is not None and len(value) > self.max_length:
            raise ValidationError(self.messages["too_long"] % self.max_length)
        if _BAD_CHARS.search(value):
            raise ValidationError(self.messages["chars"])
        return value

    def convert(self, text: str) -> Any:
        """Turn non-empty clean *text* into the widget's value."""
        return text

    def format(self, value: Any) -> str:
        """Turn an initial value into the text shown in the control."""
        return str(value)

    def display_value(self) -> str:
        """The text to show: what was submitted, else the formatted initial value."""
        if self.processed:
            return self.submitted or ""
        return "" if self.initial is None else self.format(self.initial)

    # -- rendering -------------------------------------------------------------

    @property
    def hint_id(self) -> str:
        """The id of the hint element."""
        return self.id + "-hint"

    @property
    def error_id(self) -> str:
        """The id of the error element, referenced by ``aria-describedby``."""
        return self.id + "-error"

    def control_attrs(self) -> dict[str, Any]:
        """Attributes every control gets: the caller's ``attrs``, then ours (which win)."""
        described = [i for i, on in ((self.hint_id, self.hint), (self.error_id, self.error)) if on]
        return merge_attrs(
            self.attrs,
            {
                "id": self.id,
                "name": self.name,
                "required": self.required,
                "aria-invalid": "true" if self.error else None,
                "aria-describedby": " ".join(described) or None,
            },
        )

    def render_control(self) -> htmltext:
        """The control itself (``<input>``, ``<select>``, ...)."""
        raise NotImplementedError

    def render_label(self) -> htmltext:
        """``<label for=...>``, tied to the control by id."""
        return htmltext('<label for="%s">%s</label>') % (self.id, self.label)

    def render_hint(self) -> htmltext:
        """The hint paragraph, or nothing."""
        if not self.hint:
            return _EMPTY
        return htmltext('<p class="hint" id="%s">%s</p>') % (self.hint_id, self.hint)

    def render_error(self) -> htmltext:
        """The error paragraph, or nothing."""
        if not self.error:
            return _EMPTY
        return htmltext('<p class="error" id="%s">%s</p>') % (self.error_id, self.error)

    def css_class(self) -> str:
        """Classes of the row element."""
        classes = ["field", "field-" + self.kind]
        if self.required:
            classes.append("required")
        if self.error:
            classes.append("has-error")
        return " ".join(classes)

    def render(self) -> htmltext:
        """The whole row: label, control, hint and error."""
        if self.label_after:
            inner = self.render_control() + self.render_label()
        else:
            inner = self.render_label() + self.render_control()
        return htmltext('<div class="%s">%s%s%s</div>\n') % (
            self.css_class(),
            inner,
            self.render_hint(),
            self.render_error(),
        )

    def __html__(self) -> str:
        return str(self.render())

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class TextWidget(Widget):
    """``<input type="text">``; surrounding whitespace is stripped."""

    kind = "text"
    input_type: ClassVar[str] = "text"
    strip: ClassVar[bool] = True

    def check_text(self, value: object) -> str:
        text = super().check_text(value)
        return text.strip() if self.strip else text

    def input_attrs(self) -> dict[str, Any]:
        """Attributes specific to this input type."""
        return {"maxlength": self.max_length}

    def render_control(self) -> htmltext:
        attrs = merge_attrs(
            {"type": self.input_type},
            self.control_attrs(),
            {"value": self.display_value()},
            self.input_attrs(),
        )
        return htmltext("<input%s>") % render_attributes(attrs)


class PasswordWidget(TextWidget):
    """``<input type="password">``: never shows a value back."""

    kind = "password"
    input_type = "password"
    strip = False

    def display_value(self) -> str:
        return ""


class HiddenWidget(TextWidget):
    """``<input type="hidden">``: no row; its errors are shown with the form's."""

    kind = "hidden"
    input_type = "hidden"
    is_hidden = True
    max_length = 4096

    def input_attrs(self) -> dict[str, Any]:
        return {}

    def control_attrs(self) -> dict[str, Any]:
        return merge_attrs(self.attrs, {"id": self.id, "name": self.name})

    def render(self) -> htmltext:
        return self.render_control() + "\n"


class EmailWidget(TextWidget):
    """``<input type="email">`` with a deliberately loose address check."""

    kind = "email"
    input_type = "email"
    max_length = 254
    messages: ClassVar[dict[str, str]] = {
        **Widget.messages,
        "invalid": "Enter a valid e-mail address.",
    }
    _address = re.compile(r"[^@\s]+@(?:[^@\s.]+\.)+[^@\s.]+")

    def convert(self, text: str) -> str:
        if not self._address.fullmatch(text):
            raise ValidationError(self.messages["invalid"])
        return text


class _NumberWidget(TextWidget):
    """Shared min/max handling for the number widgets."""

    input_type = "number"
    max_length = 40
    messages: ClassVar[dict[str, str]] = {
        **Widget.messages,
        "invalid": "Enter a number.",
        "min": "Must be at least %s.",
        "max": "Must be at most %s.",
    }

    def __init__(
        self, name: str, value: Any = None, *, min: Any = None, max: Any = None, **kwargs: Any
    ) -> None:
        super().__init__(name, value, **kwargs)
        self.min = min
        self.max = max

    def check_range(self, number: _Number) -> _Number:
        """Return *number* if it is within ``min``/``max``."""
        if self.min is not None and number < self.min:
            raise ValidationError(self.messages["min"] % self.min)
        if self.max is not None and number > self.max:
            raise ValidationError(self.messages["max"] % self.max)
        return number

    def input_attrs(self) -> dict[str, Any]:
        return {"min": self.min, "max": self.max}


class IntWidget(_NumberWidget):
    """``<input type="number" step="1">`` parsed to ``int`` (ASCII digits only)."""

    kind = "int"
    messages: ClassVar[dict[str, str]] = {
        **_NumberWidget.messages,
        "invalid": "Enter a whole number.",
    }
    # int() alone would also accept "1_000" and non-ASCII digits.
    _syntax = re.compile(r"[+-]?[0-9]+")

    def convert(self, text: str) -> int:
        if not self._syntax.fullmatch(text):
            raise ValidationError(self.messages["invalid"])
        try:
            number = int(text)
        except ValueError:  # more digits than int() converts, if max_length allows them
            raise ValidationError(self.messages["invalid"]) from None
        return self.check_range(number)

    def input_attrs(self) -> dict[str, Any]:
        return {**super().input_attrs(), "step": "1"}


class DecimalWidget(_NumberWidget):
    """``<input type="number">`` parsed to :class:`decimal.Decimal` (finite, ASCII)."""

    kind = "decimal"
    messages: ClassVar[dict[str, str]] = {
        **_NumberWidget.messages,
        "places": "Use at most %d decimal places.",
    }
    # Decimal() alone would also accept "NaN", "Infinity" and huge exponents.
    _syntax = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")

    def __init__(
        self, name: str, value: Any = None, *, places: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(name, value, **kwargs)
        self.places = places

    def convert(self, text: str) -> decimal.Decimal:
        if not self._syntax.fullmatch(text):
            raise ValidationError(self.messages["invalid"])
        number = decimal.Decimal(text)
        if self.places is not None and "." in text and len(text.split(".")[1]) > self.places:
            raise ValidationError(self.messages["places"] % self.places)
        return self.check_range(number)

    def input_attrs(self) -> dict[str, Any]:
        step = "any" if self.places is None else str(decimal.Decimal(1).scaleb(-self.places))
        return {**super().input_attrs(), "step": step}


class DateWidget(TextWidget):
    """``<input type="date">`` parsed from ``YYYY-MM-DD`` to :class:`datetime.date`."""

    kind = "date"
    input_type = "date"
    max_length = 10
    messages: ClassVar[dict[str, str]] = {
        **Widget.messages,
        "invalid": "Enter a date as YYYY-MM-DD.",
        "min": "Must be on or after %s.",
        "max": "Must be on or before %s.",
    }
    _syntax = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")

    def __init__(
        self,
        name: str,
        value: datetime.date | None = None,
        *,
        min: datetime.date | None = None,
        max: datetime.date | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name, value, **kwargs)
        self.min = min
        self.max = max

    def convert(self, text: str) -> datetime.date:
        try:
            if not self._syntax.fullmatch(text):
                raise ValueError(text)
            day = datetime.date.fromisoformat(text)
        except ValueError:
            raise ValidationError(self.messages["invalid"]) from None
        if self.min is not None and day < self.min:
            raise ValidationError(self.messages["min"] % self.min.isoformat())
        if self.max is not None and day > self.max:
            raise ValidationError(self.messages["max"] % self.max.isoformat())
        return day

    def format(self, value: Any) -> str:
        return value.isoformat() if isinstance(value, datetime.date) else str(value)

    def input_attrs(self) -> dict[str, Any]:
        return {
            "min": self.min.isoformat() if self.min else None,
            "max": self.max.isoformat() if self.max else None,
        }


class TextAreaWidget(Widget):
    """``<textarea>``; line endings are normalised to ``\\n``."""

    kind = "textarea"
    max_length = 20000

    def __init__(
        self, name: str, value: Any = None, *, rows: int = 5, cols: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(name, value, **kwargs)
        self.rows = rows
        self.cols = cols

    def check_text(self, value: object) -> str:
        return super().check_text(value).replace("\r\n", "\n").replace("\r", "\n")

    def render_control(self) -> htmltext:
        attrs = merge_attrs(
            self.control_attrs(),
            {"rows": self.rows, "cols": self.cols, "maxlength": self.max_length},
        )
        # The leading newline keeps a value that starts with one: HTML drops
        # the first newline after <textarea>.
        return htmltext("<textarea%s>\n%s</textarea>") % (
            render_attributes(attrs),
            self.display_value(),
        )


class CheckboxWidget(Widget):
    """``<input type="checkbox">``: True when submitted, else False.

    ``required=True`` means it must be ticked (e.g. accepting terms).
    """

    kind = "checkbox"
    label_after = True
    empty_value = False

    def is_empty(self, value: Any) -> bool:
        return not value

    def extract(self, data: FormData) -> bool:
        values = data.getlist(self.name)
        self.submitted = "on" if values else None
        if len(values) > 1:
            raise ValidationError(self.messages["repeated"])
        return bool(values)

    def render_control(self) -> htmltext:
        checked = self.submitted is not None if self.processed else bool(self.initial)
        attrs = merge_attrs(
            {"type": "checkbox"}, self.control_attrs(), {"value": "on", "checked": checked}
        )
        return htmltext("<input%s>") % render_attributes(attrs)


class Option:
    """One choice: the Python *value*, the *label* shown and the *key* submitted."""

    __slots__ = ("key", "label", "value")

    def __init__(self, value: Any, label: Any = None, key: str | None = None) -> None:
        self.value = value
        self.label = label if label is not None else str(value)
        self.key = key if key is not None else str(value)

    @classmethod
    def make(cls, spec: Any) -> Option:
        """From an Option, a ``(value, label[, key])`` tuple or a bare value."""
        if isinstance(spec, Option):
            return spec
        if isinstance(spec, tuple):
            return cls(*spec)
        return cls(spec)


class _ChoiceWidget(Widget):
    """Shared option handling for radio buttons and selects."""

    messages: ClassVar[dict[str, str]] = {**Widget.messages, "invalid": "Select a valid choice."}

    def __init__(
        self, name: str, value: Any = None, *, options: Iterable[Any], **kwargs: Any
    ) -> None:
        super().__init__(name, value, **kwargs)
        self.options = [Option.make(o) for o in options]
        self._by_key = {o.key: o for o in self.options}
        if len(self._by_key) != len(self.options):
            raise ValueError(f"duplicate option keys in {name!r}")

    def lookup(self, key: Any) -> Any:
        """The value of the option submitted as *key*."""
        option = self._by_key.get(self.check_text(key))
        if option is None:
            raise ValidationError(self.messages["invalid"])
        return option.value

    def selected_keys(self) -> set[str]:
        """Keys to mark selected: the submitted ones, else the initial value's."""
        if self.processed:
            return set(self.submitted_keys)
        initial = self.initial if isinstance(self.initial, (list, tuple, set)) else [self.initial]
        return {o.key for o in self.options if any(o.value == v for v in initial)}

    @property
    def submitted_keys(self) -> list[str]:
        """The submitted keys, cleaned for display."""
        return [] if self.submitted is None else [self.submitted]

    def convert(self, text: str) -> Any:
        return self.lookup(text)

    def render_options(self) -> htmltext:
        """The ``<option>`` elements."""
        selected = self.selected_keys()
        return _EMPTY.join(
            htmltext('<option value="%s"%s>%s</option>')
            % (o.key, render_attributes({"selected": o.key in selected}), o.label)
            for o in self.options
        )


class SelectWidget(_ChoiceWidget):
    """``<select>`` with one choice; *placeholder* adds a first, empty option."""

    kind = "select"

    def __init__(
        self,
        name: str,
        value: Any = None,
        *,
        options: Iterable[Any],
        placeholder: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name, value, options=options, **kwargs)
        self.placeholder = placeholder

    def render_control(self) -> htmltext:
        first = _EMPTY
        if self.placeholder is not None:
            first = htmltext('<option value="">%s</option>') % self.placeholder
        return htmltext("<select%s>%s%s</select>") % (
            render_attributes(self.control_attrs()),
            first,
            self.render_options(),
        )


class MultipleSelectWidget(_ChoiceWidget):
    """``<select multiple>``: all submitted values count; the value is a list."""

    kind = "multiple-select"
    empty_value: ClassVar[Any] = []

    def __init__(
        self,
        name: str,
        value: Any = None,
        *,
        options: Iterable[Any],
        size: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name, value, options=options, **kwargs)
        self.size = size
        self._submitted_keys: list[str] = []

    def is_empty(self, value: Any) -> bool:
        return not value

    @property
    def submitted_keys(self) -> list[str]:
        return self._submitted_keys

    def extract(self, data: FormData) -> list[Any]:
        values = data.getlist(self.name)
        self._submitted_keys = [_display(v) for v in values]
        result = []
        for key in values:
            value = self.lookup(key)
            if value not in result:
                result.append(value)
        return result

    def process(self, data: FormData) -> None:
        super().process(data)
        # A fresh list per widget: the class-level empty value is shared.
        self.value = list(self.value)

    def render_control(self) -> htmltext:
        attrs = merge_attrs(self.control_attrs(), {"multiple": True, "size": self.size})
        return htmltext("<select%s>%s</select>") % (render_attributes(attrs), self.render_options())


class RadioButtonsWidget(_ChoiceWidget):
    """A ``<fieldset>`` of ``<input type="radio">``, labelled by its ``<legend>``."""

    kind = "radio"

    def option_id(self, index: int) -> str:
        """The id of the *index*-th radio button."""
        return f"{self.id}_{index}"

    def render_label(self) -> htmltext:
        return htmltext("<legend>%s</legend>") % self.label

    def render_control(self) -> htmltext:
        selected = self.selected_keys()
        common = self.control_attrs()
        rows = []
        for index, option in enumerate(self.options):
            attrs = merge_attrs(
                common,
                {
                    "type": "radio",
                    "id": self.option_id(index),
                    "value": option.key,
                    "checked": option.key in selected,
                },
            )
            rows.append(
                htmltext('<div class="option"><input%s><label for="%s">%s</label></div>')
                % (render_attributes(attrs), self.option_id(index), option.label)
            )
        return _EMPTY.join(rows)

    def render(self) -> htmltext:
        return htmltext('<fieldset class="%s" id="%s">%s%s%s%s</fieldset>\n') % (
            self.css_class(),
            self.id,
            self.render_label(),
            self.render_control(),
            self.render_hint(),
            self.render_error(),
        )


class FileWidget(Widget):
    """``<input type="file">``; the value is an :class:`UploadedFile` or None.

    A form with a file widget renders ``enctype="multipart/form-data"``.
    """

    kind = "file"
    max_length = None
    messages: ClassVar[dict[str, str]] = {
        **Widget.messages,
        "too_big": "The file is too large (at most %d bytes).",
    }

    def __init__(
        self,
        name: str,
        value: Any = None,
        *,
        max_size: int | None = None,
        accept: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name, value, **kwargs)
        self.max_size = max_size
        self.accept = accept

    def extract(self, data: FormData) -> UploadedFile | None:
        files = data.getfiles(self.name)
        if len(files) > 1:
            raise ValidationError(self.messages["repeated"])
        upload = files[0] if files else None
        if upload is not None and self.max_size is not None and upload.size > self.max_size:
            raise ValidationError(self.messages["too_big"] % self.max_size)
        return upload

    def render_control(self) -> htmltext:
        attrs = merge_attrs({"type": "file"}, self.control_attrs(), {"accept": self.accept})
        return htmltext("<input%s>") % render_attributes(attrs)


class SubmitButton(Widget):
    """``<button type="submit">``; ``Form.get_submit()`` says which one was pressed."""

    kind = "submit"
    is_field = False

    def __init__(
        self, name: str, label: str | None = None, *, attrs: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(name, label=label, attrs=attrs)

    def extract(self, data: FormData) -> bool:
        return bool(data.getlist(self.name))

    def is_empty(self, value: Any) -> bool:
        return not value

    def render_control(self) -> htmltext:
        attrs = merge_attrs(self.attrs, {"type": "submit", "name": self.name, "value": "1"})
        return htmltext("<button%s>%s</button>") % (render_attributes(attrs), self.label)

    def render(self) -> htmltext:
        return self.render_control() + "\n"
