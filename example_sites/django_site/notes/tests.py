"""Run with ``python manage.py test``: Django's own runner, with PTL templates."""

from django.test import TestCase
from django.urls import reverse

from .models import Note


class NoteViewsTests(TestCase):
    def test_list_uses_the_ptl_template(self) -> None:
        Note.objects.create(title="First", text="hello")
        response = self.client.get(reverse("notes:list"))
        self.assertTemplateUsed(response, "notes/list.ptl")
        self.assertEqual(list(response.context["notes"]), list(Note.objects.all()))
        self.assertContains(response, "First")
        self.assertContains(response, 'name="csrfmiddlewaretoken"')

    def test_posted_markup_comes_back_escaped(self) -> None:
        data = {"title": "<b>bold</b>", "text": "<script>alert(1)</script>"}
        response = self.client.post(reverse("notes:list"), data, follow=True)
        note = Note.objects.get()
        self.assertRedirects(response, note.get_absolute_url())
        self.assertTemplateUsed(response, "notes/detail.ptl")
        self.assertContains(response, "&lt;script&gt;alert(1)&lt;/script&gt;")
        self.assertContains(response, "Saved “&lt;b&gt;bold&lt;/b&gt;”.")
        self.assertNotContains(response, "<script>")

    def test_invalid_form_is_shown_again(self) -> None:
        response = self.client.post(reverse("notes:list"), {"title": "", "text": "kept <i>"})
        self.assertEqual(response.status_code, 200)
        self.assertContains(response, "This field is required.")
        self.assertContains(response, "kept &lt;i&gt;</textarea>")
        self.assertFalse(Note.objects.exists())
