from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _

from .forms import NoteForm
from .models import Note


def note_list(request: HttpRequest) -> HttpResponse:
    """The notes, and a form that adds one (shown again with its errors if invalid)."""
    form = NoteForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        note = form.save()
        # A plain str with the user's title in it: the layout escapes it.
        messages.success(request, _("Saved “%(title)s”.") % {"title": note.title})
        return redirect(note)
    return render(request, "notes/list.ptl", {"notes": Note.objects.all(), "form": form})


def note_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return render(request, "notes/detail.ptl", {"note": get_object_or_404(Note, pk=pk)})
