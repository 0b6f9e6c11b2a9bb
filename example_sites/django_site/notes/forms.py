from django import forms
from django.utils.translation import gettext_lazy as _

from .models import Note


class NoteForm(forms.ModelForm):
    class Meta:
        model = Note
        fields = ["title", "text"]
        labels = {"title": _("Title"), "text": _("Text")}
        help_texts = {"text": _("Shown back exactly as typed: markup is escaped.")}
        widgets = {"text": forms.Textarea(attrs={"rows": 4})}
