"""Views that exercise the PTL engine the ways Django projects use engines."""

from typing import Any

from django import forms
from django.contrib import messages
from django.core.mail import send_mail
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.views.generic import CreateView, ListView, TemplateView

from ptl_wsgi import htmltext
from ptl_wsgi.contrib.django import html_response, render_text

from .models import Item


def site_info(request: HttpRequest) -> dict[str, Any]:
    """A context processor; the view's own values win over its ``title``."""
    return {"site_name": "Test <Site>", "title": "from the processor"}


def index(request: HttpRequest) -> HttpResponse:
    return render(request, "testapp/index.ptl", {"title": "<Items>", "items": ["a&b", "<i>"]})


def template_response(request: HttpRequest) -> TemplateResponse:
    return TemplateResponse(request, "testapp/index.ptl", {"title": "Lazy", "items": ["x"]})


class ItemForm(forms.ModelForm):
    class Meta:
        model = Item
        fields = ["name"]


def item_form(request: HttpRequest) -> HttpResponse:
    form = ItemForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        item = form.save()
        messages.success(request, f"Saved {item.name}")
        return redirect("items")
    return render(request, "testapp/form.ptl", {"form": form})


class ItemCreate(CreateView):
    model = Item
    fields = ["name"]
    template_name = "testapp/form.ptl"
    success_url = "/items/"


class ItemList(ListView):
    model = Item
    template_name = "testapp/item_list.ptl"


class About(TemplateView):
    template_name = "testapp/about.ptl"


def token(request: HttpRequest) -> HttpResponse:
    return render(request, "testapp/token.ptl")


def interop(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "testapp/interop.ptl",
        {
            "safe": mark_safe("<b>safe</b>"),
            "formatted": format_html("<i>{}</i>", "<x>"),
            "plain": "<script>",
            "form": ItemForm(data={"name": '"><script>'}),
        },
    )


def dtl(request: HttpRequest) -> HttpResponse:
    fragment = render_to_string("testapp/index.ptl:row", {"item": "<PTL>"})
    return render(request, "testapp/dtl.html", {"fragment": fragment, "plain": "<plain>"})


def fragment(request: HttpRequest) -> HttpResponse:
    return html_response(htmltext("<p>%s</p>") % request.GET.get("q", ""))


def broken(request: HttpRequest) -> HttpResponse:
    return render(request, "testapp/broken.ptl")


def raises(request: HttpRequest) -> HttpResponse:
    return render(request, "testapp/raises.ptl", {"total": 1, "count": 0})


def missing(request: HttpRequest) -> HttpResponse:
    return render(request, "testapp/missing.ptl")


def include(request: HttpRequest, name: str) -> HttpResponse:
    return render(request, f"testapp/include.ptl:{name}")


def py_template(request: HttpRequest, name: str) -> HttpResponse:
    """A template of a plain Python module (testapp/converted.py), by function name."""
    context = {"title": "<T>", "items": ["a&b", "<i>"]}
    return render(request, f"testapp/converted.py:{name}", context)


def calls_raises(request: HttpRequest) -> HttpResponse:
    return render(request, "testapp/calls_raises.ptl")


def missing_list(request: HttpRequest) -> HttpResponse:
    return render(request, ["testapp/first.ptl", "testapp/second.ptl"])


def signup(request: HttpRequest) -> HttpResponse:
    """Mail a raw-text body and show the same [plain] template, escaped, in the page."""
    context = {"name": request.GET["name"]}
    body = render_text("testapp/plain.ptl", context, request)
    send_mail("Welcome", body, "site@example.com", ["user@example.com"])
    return render(request, "testapp/plain.ptl", context)
