"""Django's filters in a .ptl template, rendered by the Django engine (docs/helpers.md)."""

from __future__ import annotations

import datetime
import re
import zoneinfo

import pytest
from django.template import engines
from django.template.loader import render_to_string
from django.utils import timezone, translation

ADDED = datetime.datetime(2026, 12, 3, 17, 30, tzinfo=datetime.timezone.utc)
BOOK = {
    "title": "Tea & <cake>",
    "blurb": "one\n<script>alert(1)</script>",
    "sold": 1234567,
    "reviews": 2,
    "added": ADDED,
    "notes": "see https://example.com/?a=1&b=2 or javascript:alert(1)",
}


def render() -> str:
    return render_to_string("testapp/filters.ptl", {"book": BOOK})


def test_filters_escape_and_mark_up() -> None:
    page = render()
    assert "<h1>Tea &amp; &lt;cake&gt;</h1>" in page
    assert "<p>one<br>&lt;script&gt;alert(1)&lt;/script&gt;</p>" in page
    assert "<p>1,234,567 copies, 2 reviews</p>" in page
    assert '<a href="https://example.com/?a=1&amp;b=2" rel="nofollow">' in page
    assert "<script" not in page and 'href="javascript' not in page


@pytest.mark.parametrize(
    ("language", "zone"), [("en", "UTC"), ("de", "Europe/Berlin"), ("fr", "Asia/Tokyo")]
)
def test_datetime_renders_as_a_django_template_does(language: str, zone: str) -> None:
    dtl = engines["django"].from_string("{{ book.added }}")
    with timezone.override(zoneinfo.ZoneInfo(zone)), translation.override(language):
        shown = re.search(r'<p class="added">(.*)</p>', render()).group(1)
        assert shown == dtl.render({"book": BOOK})
    if language == "de":
        assert shown == "3. Dezember 2026 18:30"
