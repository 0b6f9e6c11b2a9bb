"""Django's template language at run time, for templates converted from it.

``ptl-wsgi convert --from-django`` writes PTL that imports this module as ``dj``:
``dj.var(question, "choice_set", "all")`` is ``{{ question.choice_set.all }}``,
``dj.pluralize(n)`` is ``{{ n|pluralize }}``, ``dj.show(value)`` is what ``{{ }}``
does to a value before it is output.  The converted app is a Django app, so the
filters are Django's own builtin filters, run with the rules Django's template engine
applies around them (the ``is_safe``, ``needs_autoescape`` and ``expects_localtime``
flags, markup arguments), and Django is imported when one is first used, not before.

Escaping stays PTL's: :func:`show` hands a value on as ``str`` (escaped where it lands)
unless it is markup (``SafeString``, ``htmltext``), which is what Django's
``conditional_escape`` trusts too.  Inside ``{% autoescape off %}`` it trusts the text,
as Django outputs it unescaped there.

A variable that does not exist resolves to ``""`` (Django's default
``string_if_invalid``), or to ``None`` in the conditions of ``{% if %}`` and the
other places Django resolves with ``ignore_failures``; a converted template reads
the names the view may leave out as :data:`ptl_wsgi.idioms.undefined`
(``question = context.get("question", undefined)``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, NamedTuple, TypeVar

from ptl_wsgi.escaping.rules import is_markup
from ptl_wsgi.html import htmltext
from ptl_wsgi.idioms import Layout, LoopContext, Undefined, converted_name

_L = TypeVar("_L", bound=Layout)

__all__ = [
    "BUILTIN_FILTERS",
    "Changed",
    "Cycle",
    "FilterFunction",
    "GroupedResult",
    "argument",
    "autoescaping",
    "blocktranslate",
    "compare",
    "condition",
    "csrf_token",
    "current_language",
    "false_on_error",
    "for_values",
    "include",
    "library_filter",
    "lorem",
    "now",
    "regroup",
    "scoped",
    "show",
    "simple_tag",
    "spaceless",
    "static",
    "static_prefix",
    "translate",
    "url",
    "var",
    "widthratio",
]

#: The names of Django's builtin filters (``django.template.defaultfilters``), each a
#: function of this module.
BUILTIN_FILTERS = (
    "add addslashes capfirst center cut date default default_if_none dictsort "
    "dictsortreversed divisibleby escape escapejs escapeseq filesizeformat first "
    "floatformat force_escape get_digit iriencode join json_script last length linebreaks "
    "linebreaksbr linenumbers ljust lower make_list phone2numeric pluralize pprint random "
    "rjust safe safeseq slice slugify stringformat striptags time timesince timeuntil title "
    "truncatechars truncatechars_html truncatewords truncatewords_html unordered_list upper "
    "urlencode urlize urlizetrunc wordcount wordwrap yesno"
).split()

#: What a missing variable renders as (Django's default ``string_if_invalid``).
STRING_IF_INVALID = ""


def _to_django(value: Any) -> Any:
    """*value* as Django's filters see it: markup of any kind is a ``SafeString``."""
    if type(value) is str or not isinstance(value, str) or not is_markup(value):
        return value  # (the common cases first: no Django needed)
    from django.utils.safestring import SafeData, SafeString

    return value if isinstance(value, SafeData) else SafeString(value)


@functools.cache
def _shown() -> Callable[[Any], Any]:
    """Django's way from a value to its text: the current time zone, then the locale."""
    from django.utils.formats import localize
    from django.utils.timezone import template_localtime

    return lambda value: localize(template_localtime(value))


# -- variables ---------------------------------------------------------------------------


def _call(current: Any) -> Any:
    """Django's rule for a callable met while resolving a variable."""
    if getattr(current, "do_not_call_in_templates", False):
        return current
    if getattr(current, "alters_data", False):
        return STRING_IF_INVALID
    try:
        return current()
    except TypeError:
        import inspect

        try:
            signature = inspect.signature(current)
        except ValueError:
            return STRING_IF_INVALID
        try:
            signature.bind()
        except TypeError:  # it needs arguments: not callable from a template
            return STRING_IF_INVALID
        raise


class _Missing(Exception):
    pass


_FAILED: Any = object()


def _step(current: Any, bit: str) -> Any:
    """One ``.bit`` of a variable, in Django's order: item, attribute, list index."""
    try:
        if not hasattr(type(current), "__getitem__"):
            raise TypeError
        return current[bit]
    except (TypeError, AttributeError, KeyError, ValueError, IndexError):
        pass
    try:
        return getattr(current, bit)
    except (TypeError, AttributeError):
        if bit in dir(current):  # raised by a property: Django lets it through
            raise
    try:
        return current[int(bit)]
    except (IndexError, ValueError, KeyError, TypeError):
        raise _Missing from None


def var(value: Any, *path: str, missing: Any = STRING_IF_INVALID) -> Any:
    """``{{ value.a.b }}`` resolved as Django resolves a variable.

    Each step tries an item, then an attribute, then a list index, and calls what it
    finds when callable (not a ``do_not_call_in_templates`` one; an ``alters_data``
    one gives ``""``).  *value* is the variable's value, undefined when the context
    lacked it; a failed lookup gives *missing* (``""``; ``None`` where Django ignores
    failures, as in ``{% if %}``).
    """
    if isinstance(value, Undefined):
        return missing
    try:
        current = _call(value) if callable(value) else value
        for bit in path:
            if isinstance(current, Undefined):
                return missing
            # A literal's htmltext as Django's SafeString, whose methods give plain text:
            # "<b>".upper is escaped in Django, so it is here.
            current = _step(_to_django(current), bit)
            if callable(current):
                current = _call(current)
    except _Missing:
        return missing
    except Exception as exc:
        if getattr(exc, "silent_variable_failure", False):
            return STRING_IF_INVALID
        raise
    if isinstance(current, Undefined):
        return missing
    return current


def argument(value: Any, *path: str) -> Any:
    """A filter's argument ``{{ x|default:value.a }}``: as :func:`var`, but a failed lookup raises.

    Django resolves a filter's variable argument strictly: a missing one raises
    ``VariableDoesNotExist``, and so does the render.
    """
    found = var(value, *path, missing=_FAILED)
    if found is _FAILED:
        from django.template import VariableDoesNotExist

        raise VariableDoesNotExist("Failed lookup for a filter argument")
    return found


def condition(test: Callable[[], Any]) -> Any:
    """An ``{% if %}`` condition with a filter's variable argument: a missing one is false."""
    from django.template import VariableDoesNotExist

    try:
        return test()
    except VariableDoesNotExist:
        return None


def show(value: Any, autoescape: bool | None = None) -> Any:
    """What ``{{ }}`` outputs for *value*: localised, and markup only if it was markup.

    Dates and times are shown in the current time zone and numbers and dates in the
    active locale's formats, as Django renders them; ``None`` is ``"None"``.  With
    *autoescape* false (``{% autoescape off %}``; by default, as the render in
    progress has it: :func:`autoescaping`) the text is trusted as it is.
    """
    if isinstance(value, Undefined):
        value = STRING_IF_INVALID
    if type(value) is str:  # (the common case: text, shown as it is)
        return value if _escaping(autoescape) else htmltext(value)
    if not isinstance(value, str) or is_markup(value):
        value = _shown()(value)
    if not _escaping(autoescape):
        return htmltext(str(value))
    if is_markup(value):
        return value
    return str(value)


_AUTOESCAPE: ContextVar[bool] = ContextVar("ptl_wsgi_django_autoescape", default=True)


def _escaping(autoescape: bool | None) -> bool:
    return _AUTOESCAPE.get() if autoescape is None else autoescape


@contextmanager
def autoescaping(on: bool) -> Iterator[None]:
    """Render the templates called inside as ``{% autoescape on|off %}`` around them.

    Django's autoescape setting belongs to the render's context, so a template
    included (or a block filled) inside ``{% autoescape off %}`` does not escape either.
    """
    token = _AUTOESCAPE.set(on)
    try:
        yield
    finally:
        _AUTOESCAPE.reset(token)


# -- filters -----------------------------------------------------------------------------


class FilterFunction:
    """One of Django's filters, called with the rules of Django's template engine.

    ``dj.date(value, "Y")`` is ``{{ value|date:"Y" }}``; ``autoescape=False`` is the
    filter inside ``{% autoescape off %}``.
    """

    def __init__(self, name: str, find: Callable[[str], Callable[..., Any]] | None = None):
        self.__name__ = self.name = name
        self._find = find or _builtin_filter

    @functools.cached_property
    def function(self) -> Callable[..., Any]:
        """Django's function for this filter."""
        return self._find(self.name)

    def __call__(self, value: Any, *args: Any, autoescape: bool | None = None) -> Any:
        from django.utils.safestring import SafeData, mark_safe

        func = self.function
        value = _to_django(value)
        arguments = [_to_django(arg) for arg in args]
        if getattr(func, "expects_localtime", False):
            from django.utils.timezone import template_localtime

            value = template_localtime(value)
        if getattr(func, "needs_autoescape", False):
            result = func(value, *arguments, autoescape=_escaping(autoescape))
        else:
            result = func(value, *arguments)
        if getattr(func, "is_safe", False) and isinstance(value, SafeData):
            return mark_safe(result)
        return result

    def __repr__(self) -> str:
        return f"<Django filter {self.name!r}>"


def _builtin_filter(name: str) -> Callable[..., Any]:
    from django.template.defaultfilters import register

    return register.filters[name]  # type: ignore[no-any-return]


def library_filter(module: str, name: str) -> FilterFunction:
    """The filter *name* of the module *module*: a function, or a Django ``Library``'s filter.

    What ``--filters MODULE`` makes converted templates call for filters that are
    not builtin.
    """

    def find(filter_name: str) -> Callable[..., Any]:
        import importlib

        found = importlib.import_module(module)
        register = getattr(found, "register", None)
        filters = getattr(register, "filters", None)
        if isinstance(filters, Mapping) and filter_name in filters:
            return filters[filter_name]  # type: ignore[no-any-return]
        return getattr(found, filter_name)  # type: ignore[no-any-return]

    return FilterFunction(name, find)


for _name in BUILTIN_FILTERS:
    globals()[_name] = FilterFunction(_name)
del _name


# -- tags --------------------------------------------------------------------------------


def compare(left: Any, operator: str, right: Any) -> bool:
    """A comparison of ``{% if %}``: false where Python would raise (``"" < 1``), as in Django."""
    try:
        if operator == "<":
            return bool(left < right)
        if operator == ">":
            return bool(left > right)
        if operator == "<=":
            return bool(left <= right)
        if operator == ">=":
            return bool(left >= right)
        if operator == "in":
            return left in right
        if operator == "not in":
            return left not in right
        if operator == "==":
            return bool(left == right)
        if operator == "!=":
            return bool(left != right)
    except Exception:
        return False
    raise ValueError(f"not a comparison of Django's if: {operator!r}")


def false_on_error(test: Callable[[], Any]) -> Any:
    """An operator of ``{% if %}`` whose operands have filters: false if working it out raises.

    As Django's ``{% if not items|first %}`` is false where ``first`` fails.
    """
    try:
        return test()
    except Exception:
        return False


def for_values(values: Any, reverse: bool = False, unpack: int = 1) -> Sequence[Any]:
    """The items ``{% for %}`` loops over: ``None`` is none, an iterator is read once.

    With *unpack* loop variables (``{% for key, value in ... %}``), an item of another
    length is Django's ``ValueError``.
    """
    if values is None:
        values = []
    elif not hasattr(values, "__len__"):
        values = list(values)
    if reverse:
        values = list(reversed(values))
    if unpack > 1:
        for item in values:
            try:
                found = len(item)
            except TypeError:
                found = 1
            if found != unpack:
                raise ValueError(f"Need {unpack} values to unpack in for loop; got {found}. ")
    return values  # type: ignore[no-any-return]


def csrf_token(token: Any) -> Any:
    """``{% csrf_token %}``: the hidden input carrying *token* (the context's ``csrf_token``)."""
    if isinstance(token, Undefined) or not token or token == "NOTPROVIDED":
        return htmltext("")
    return htmltext('<input type="hidden" name="csrfmiddlewaretoken" value="%s">') % str(token)


def url(view_name: Any, *args: Any, silent: bool = False, **kwargs: Any) -> str:
    """``{% url %}``: ``reverse()``; with ``silent`` (the ``as name`` form) a failure is ``""``."""
    from django.urls import NoReverseMatch, reverse

    from ptl_wsgi.loader import render_context

    request = render_context().get("request")
    current_app = None
    if request is not None:
        current_app = getattr(request, "current_app", None)
        if current_app is None:
            match = getattr(request, "resolver_match", None)
            current_app = getattr(match, "namespace", None)
    try:
        return str(
            reverse(str(view_name), args=args, kwargs=kwargs or None, current_app=current_app)
        )
    except NoReverseMatch:
        if silent:
            return ""
        raise


def static(path: Any) -> str:
    """``{% static %}``: the URL of a static file (Django's ``static()``)."""
    from django.templatetags.static import static as django_static

    return str(django_static(str(path)))


def static_prefix(setting: str) -> str:
    """``{% get_static_prefix %}`` and ``{% get_media_prefix %}``: the setting's URL prefix."""
    from django.templatetags.static import PrefixNode

    return PrefixNode.handle_simple(setting)  # type: ignore[no-any-return]


def now(format_string: str) -> str:
    """``{% now %}``: the current time in *format_string* (in the current time zone)."""
    from datetime import datetime

    from django.conf import settings
    from django.utils import timezone
    from django.utils.dateformat import format as date_format

    zone = timezone.get_current_timezone() if settings.USE_TZ else None
    return str(date_format(datetime.now(tz=zone), format_string))


def widthratio(value: Any, max_value: Any, max_width: Any) -> str:
    """``{% widthratio %}``: ``value / max_value * max_width``, rounded; ``""`` when not numbers."""
    try:
        width = int(max_width)
    except (ValueError, TypeError):
        from django.template import TemplateSyntaxError

        raise TemplateSyntaxError("widthratio final argument must be a number") from None
    try:
        return str(round(float(value) / float(max_value) * width))
    except ZeroDivisionError:
        return "0"
    except (ValueError, TypeError, OverflowError):
        return ""


_BETWEEN_TAGS = re.compile(r">\s+<")


def spaceless(markup: Any) -> Any:
    """``{% spaceless %}``: the whitespace between tags removed, and at both ends."""
    text = str(markup).strip()
    result = _BETWEEN_TAGS.sub("><", text)
    return htmltext(result) if is_markup(markup) else result


def lorem(count: int = 1, method: str = "b", common: bool = True) -> Any:
    """``{% lorem %}``: Django's lorem ipsum: words (``w``), paragraphs (``p`` HTML, ``b`` text)."""
    from django.utils.lorem_ipsum import paragraphs, words

    if method == "w":
        return words(count, common=common)
    found = paragraphs(count, common=common)
    if method == "p":
        return htmltext("\n\n".join(f"<p>{p}</p>" for p in found))
    return "\n\n".join(found)


class Cycle:
    """``{% cycle %}``: each call gives the next of the values it is given, in turn."""

    def __init__(self) -> None:
        self.position = 0

    def __call__(self, *values: Any) -> Any:
        value = values[self.position % len(values)]
        self.position += 1
        return value

    def reset(self) -> None:
        """``{% resetcycle %}``."""
        self.position = 0


class Changed:
    """``{% ifchanged %}``: whether the values differ from the last call's (true on the first).

    Called with the enclosing loop (``forloop``, undefined outside loops): as Django keeps
    the state in its ``forloop``, each run of a loop starts afresh, and a template
    included in a loop remembers the values of the iterations before.  *key* names the
    tag (its template and line).
    """

    def __init__(self, key: str) -> None:
        self.key = key
        self._states: dict[str, list[Any]] = {}

    def __call__(self, loop: Any, *values: Any) -> bool:
        states = self._states
        if isinstance(loop, LoopContext):
            states = loop.__dict__.setdefault("_django_ifchanged", {})
        compare_to = list(values)
        if self.key in states and states[self.key] == compare_to:
            return False
        states[self.key] = compare_to
        return True


class GroupedResult(NamedTuple):
    """One group of ``{% regroup %}``: its ``grouper`` and its ``list``."""

    grouper: Any
    list: list[Any]


def regroup(values: Any, key: Callable[[Any], Any]) -> list[GroupedResult]:
    """``{% regroup values by key as name %}``: runs of equal keys, in order."""
    import itertools

    if not values:
        return []
    return [
        GroupedResult(grouper, list(items)) for grouper, items in itertools.groupby(values, key)
    ]


def simple_tag(
    module: str, name: str, context: Mapping[str, Any] | None, *args: Any, **kwargs: Any
) -> Any:
    """A ``simple_tag`` of a tag library (``{% querystring %}``, a project's own tags).

    Its function *name* of *module*, called as Django calls it: with the render's context
    (a Django ``RequestContext`` when the context has the request) when it takes one.
    """
    import importlib

    from django.template import Context, RequestContext

    function = getattr(importlib.import_module(module), name)
    # Literals (htmltext) as Django's SafeString, whose methods give plain, escaped text.
    args = tuple(_to_django(arg) for arg in args)
    kwargs = {key: _to_django(value) for key, value in kwargs.items()}
    if context is not None:
        values = dict(context)
        request = values.get("request")
        django_context = (
            RequestContext(request, values) if hasattr(request, "META") else Context(values)
        )
        django_context.autoescape = _AUTOESCAPE.get()
        args = (django_context, *args)
    return function(*args, **kwargs)


def include(module_name: str, name: Any, context: Mapping[str, Any]) -> Any:
    """``{% include name %}`` with a name known at render only: that template, converted.

    *name* is the original's name (``"polls/row.html"``), or a list of names of which
    the first that exists is used, as Django's ``select_template``; *module_name* is
    the including module's ``__name__``, whose loader finds the converted file.  None
    existing is Django's ``TemplateDoesNotExist``.
    """
    from ptl_wsgi.loader import TemplateNotFound, loader_for

    loader = loader_for(module_name)
    names = [name] if isinstance(name, str) else list(name)
    if not names or not all(isinstance(each, str) for each in names):
        raise TypeError(f"{{% include %}} takes a template name, not {name!r}")
    tried: list[str] = []
    for each in names:
        try:
            template = loader.get_template(converted_name(each))
        except TemplateNotFound as exc:
            tried += exc.tried
            continue
        return template(**context)
    from django.template import TemplateDoesNotExist

    raise TemplateDoesNotExist(", ".join(map(converted_name, names)) + f" (looked in {tried})")


def scoped(layout: _L, values: Mapping[str, Any]) -> _L:
    """*layout* seeing *values* too: a block called where ``for`` or ``with`` bound them."""
    import copy

    view = copy.copy(layout)
    view.context = {**layout.context, **values}
    return view


def current_language() -> str:
    """``{% get_current_language as name %}``: the active language's code."""
    from django.utils.translation import get_language

    return get_language()  # type: ignore[no-any-return]


def translate(message: Any, context: str | None = None, noop: bool = False) -> Any:
    """``{% translate %}`` and ``_("...")``: ptl_wsgi's gettext, keeping the message's trust.

    As in Django, a ``%`` of the message is a ``%`` of its message id, and a message
    that is no string (a number) raises ``AttributeError``.
    """
    from ptl_wsgi import i18n

    if isinstance(message, Undefined):
        message = STRING_IF_INVALID
    if noop:
        return message
    markup = is_markup(message)
    msgid = message.replace("%", "%%")  # (a str method: a number raises, as in Django)
    if markup and not is_markup(msgid):
        msgid = htmltext(msgid)
    if context is not None:
        translated = i18n.pgettext(context, msgid)
    else:
        translated = i18n.gettext(msgid)
    result = str(translated).replace("%%", "%")
    return htmltext(result) if is_markup(translated) else result


def blocktranslate(
    singular: Any,
    values: Mapping[str, Any],
    plural: Any = None,
    count: Any = None,
    context: str | None = None,
    autoescape: bool | None = None,
) -> Any:
    """``{% blocktranslate %}``: the translated message with its values put in.

    *singular* and *plural* use ``%(name)s`` holes (``%%`` is a percent sign), as
    Django's message ids do; *values* are shown as ``{{ }}`` shows them.
    """
    from ptl_wsgi import i18n

    if plural is not None:
        number = count
        if context is not None:
            message = i18n.npgettext(context, singular, plural, number)
        else:
            message = i18n.ngettext(singular, plural, number)
    elif context is not None:
        message = i18n.pgettext(context, singular)
    else:
        message = i18n.gettext(singular)
    shown = {name: show(value, autoescape) for name, value in values.items()}
    if not _escaping(autoescape):
        return htmltext(str(message) % {k: str(v) for k, v in shown.items()})
    return message % shown
