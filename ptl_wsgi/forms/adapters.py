"""How forms read one framework's requests and protect its forms against CSRF.

The core of :mod:`ptl_wsgi.forms` reads WSGI environs, werkzeug requests and
plain mappings, and knows no framework.  A framework's requests are read by
its adapter (a :class:`FormsAdapter`, kept in ``ptl_wsgi.contrib``), found in
one of two ways, never by importing the framework to find out:

* by the request itself: the top-level package its class comes from names
  the adapter in :data:`ADAPTERS` (``django`` -> ``contrib.forms_django``),
  imported at the first such request;
* by registration (:func:`register`; ``PTL(app)`` registers Flask's or Quart's): asked
  for the CSRF policy of a form whose request names no adapter (None, a
  mapping), as Flask's answers inside any Flask request.

Another framework's adapter goes in :data:`ADAPTERS` or through :func:`register`.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from ptl_wsgi.forms import inputs
from ptl_wsgi.forms.csrf import CSRFPolicy
from ptl_wsgi.forms.inputs import FormData

__all__ = ["ADAPTERS", "FormsAdapter", "adapter_for", "csrf_policy", "form_data", "register"]


class FormsAdapter(Protocol):
    """One framework's side of forms."""

    def form_data(self, request: Any, method: str) -> FormData | None:
        """The submission *request* carries for a form with HTTP *method* (None: not ours)."""

    def csrf_policy(self, data: FormData) -> CSRFPolicy | None:
        """The CSRF policy of a form reading *data*, or None if this framework has none here."""


#: The top-level package of a request's class -> ``"module:attribute"`` of its adapter.
ADAPTERS: dict[str, str] = {
    "django": "ptl_wsgi.contrib.forms_django:adapter",
    "flask": "ptl_wsgi.contrib.forms_flask:adapter",
    "quart": "ptl_wsgi.contrib.forms_quart:adapter",
}

_registered: list[FormsAdapter] = []


def register(adapter: FormsAdapter) -> None:
    """Ask *adapter* for the CSRF policy of forms whose request names no adapter."""
    if adapter not in _registered:
        _registered.append(adapter)


def adapter_for(request: Any) -> FormsAdapter | None:
    """The adapter of the framework *request* comes from, imported if need be."""
    if request is None:
        return None
    # __class__, not type(): Flask's ``request`` is a proxy that passes it on.
    try:
        mro = request.__class__.__mro__
    except AttributeError:
        return None
    for cls in mro:
        path = ADAPTERS.get(str(getattr(cls, "__module__", "")).partition(".")[0])
        if path is not None:
            module, _, attribute = path.partition(":")
            adapter: FormsAdapter = getattr(importlib.import_module(module), attribute)
            return adapter
    return None


def form_data(source: Any, method: str = "post") -> FormData:
    """:class:`FormData` for a form with HTTP *method* from *source*.

    *source* may be a Django ``HttpRequest`` or a Flask request (through their
    adapters), a werkzeug ``Request``, a WSGI environ, a :class:`FormData`, a
    mapping or MultiDict of submitted values (taken as a POST), or None.
    """
    adapter = adapter_for(source)
    if adapter is not None:
        data = adapter.form_data(source, method)
        if data is not None:
            return data
    return inputs.form_data(source, method)


def csrf_policy(data: FormData) -> CSRFPolicy:
    """The policy for ``csrf=True``: the framework's, or an error explaining the choice."""
    own = adapter_for(data.request)
    for adapter in [own] if own is not None else list(_registered):
        policy = adapter.csrf_policy(data)
        if policy is not None:
            return policy
    raise RuntimeError(
        "cannot protect this form against CSRF automatically: give it a Django or Flask "
        "request or Quart's form_data() (under Flask and Quart, PTL(app) covers every form "
        "of a request), "
        "pass csrf=SessionCSRF(secret, session), or csrf=False for a form that changes nothing"
    )
