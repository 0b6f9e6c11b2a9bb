"""ptl-wsgi convert --from-django: Django's engine and the converted templates, compared.

Every case of tests/support/dtl_corpus.py is rendered by Django's own engine and, converted,
by ptl_wsgi's Django engine, on the same contexts; the pages must be identical after
normalising how an escape is spelt (``&#x27;`` and ``&#39;``, ``&quot;`` and ``&#34;``).
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import django
import pytest
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template import Context, Engine, RequestContext
from django.test import Client, RequestFactory, override_settings
from django.urls import path
from dtl_corpus import CASES, HOSTILE_CASES, Case
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ptl_helpers import subprocess_env, write_files

from ptl_wsgi.contrib.django import PTLTemplates
from ptl_wsgi.loader import Loader
from ptl_wsgi.tools.converting import Job, collect
from ptl_wsgi.tools.from_django import convert_file


def vote(request: HttpRequest) -> HttpResponse:
    """A view rendering a converted template, as an app does after the conversion."""
    if request.method == "POST":
        return HttpResponse(f"voted {request.POST['choice']}")
    return render(request, "vote.ptl", {"question": {"text": "Tea & <cake>?", "id": 7}})


urlpatterns = [
    path("", lambda request: HttpResponse(), name="index"),
    path("item/<str:name>/", lambda request, name: HttpResponse(), name="item"),
    path("vote/", vote, name="vote"),
]

MISSING = object()  # a context without the variable
LIBRARIES = {"static": "django.templatetags.static", "i18n": "django.templatetags.i18n"}


def normalise(page: str) -> str:
    """*page* with every character reference spelt one way, and CSRF tokens as one.

    (Django masks the CSRF token afresh for every render.)
    """
    page = re.sub(r'(name="csrfmiddlewaretoken" value=")[A-Za-z0-9]{64}"', r'\1TOKEN"', page)
    return re.sub(r"&(#x?[0-9a-fA-F]+|quot|amp|lt|gt);", _one_spelling, page)


def _one_spelling(match: re.Match[str]) -> str:
    char = html.unescape(match.group(0))
    return f"&#{ord(char)};"


def convert(case: Case, tmp_path: Path) -> tuple[Path, Path, list[str]]:
    src, dest = tmp_path / "src", tmp_path / "dest"
    for name, text in case.files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text, encoding="utf-8")
    files = collect(str(src), str(dest))
    job = Job("django", files={f.name: f for f in files})
    problems = []
    for file in files:
        result = convert_file(file, job)
        problems += [str(p) for p in result.problems]
        Path(file.dest_path).parent.mkdir(parents=True, exist_ok=True)
        Path(file.dest_path).write_text(result.source, encoding="utf-8")
    return src, dest, problems


def render_both(case: Case, src: Path, dest: Path) -> list[tuple[str, str]]:
    django_engine = Engine(dirs=[str(src)], libraries=LIBRARIES)
    ptl_engine = PTLTemplates({"NAME": "t", "DIRS": [dest], "APP_DIRS": False, "OPTIONS": {}})
    try:
        pages = []
        django_template = django_engine.get_template("main.html")
        ptl_template = ptl_engine.get_template("main.ptl")
        request = RequestFactory().get("/list/?q=a&page=1") if case.request else None
        for context in case.contexts:
            if request is None:
                theirs = _rendered(django_template.render, Context(dict(context)))
            else:
                theirs = _rendered(django_template.render, RequestContext(request, dict(context)))
            ours = _rendered(ptl_template.render, dict(context), request)
            pages.append((theirs, ours))
        return pages
    finally:
        ptl_engine.loader.close()


def _rendered(render: Any, *args: Any) -> str:
    """The page, normalised; or the error's type, when the render raises."""
    try:
        return normalise(str(render(*args)))
    except Exception as exc:
        return f"raises {type(exc).__name__}"


def outcome(case: Case, tmp_path: Path) -> tuple[str, Any]:
    src, dest, problems = convert(case, tmp_path)
    if problems:
        return "reported", problems
    pages = render_both(case, src, dest)
    different = [(t, o) for t, o in pages if t != o]
    return ("different", different) if different else ("identical", None)


@pytest.mark.parametrize("case", CASES, ids=[f"{i}:{c.construct}" for i, c in enumerate(CASES)])
@override_settings(ROOT_URLCONF=__name__, STATIC_URL="/static/", MEDIA_URL="/media/")
def test_converted_template_renders_as_django(case: Case, tmp_path: Path) -> None:
    result, detail = outcome(case, tmp_path)
    if case.reported:
        assert result == "reported", detail
    elif case.differs:
        assert result == "different", detail
    else:
        assert result == "identical", detail


@pytest.mark.parametrize("case", HOSTILE_CASES, ids=[c.construct for c in HOSTILE_CASES])
@override_settings(ROOT_URLCONF=__name__)
def test_templates_cannot_write_code_into_the_converted_module(case: Case, tmp_path: Path) -> None:
    """Text, comments, names and arguments stay data: the module compiles and renders as Django."""
    result, detail = outcome(case, tmp_path)
    assert result == "identical", detail


# -- generated contexts ------------------------------------------------------------------------

PROPERTY_TEMPLATES = {
    "filters": "{{ a }}|{{ a|default:b }}|{{ a|default_if_none:'n' }}|{{ a|length }}|{{ a|upper }}"
    "|{{ a|add:b }}|{{ a|yesno }}|{{ a|first }}|{{ a|join:',' }}|{{ a|slice:':2' }}"
    "|{{ a|truncatechars:3 }}|{{ a|floatformat }}|{{ a|pluralize }}|{{ a|safe }}|{{ a|escape }}"
    "|{{ a|linebreaksbr }}|{{ a|urlize }}|{{ a|striptags }}|{{ a.0 }}|{{ a.b }}",
    "conditions": "{% if a > b %}gt{% elif a == b %}eq{% else %}other{% endif %}"
    "{% if a in b %}in{% endif %}{% if a not in b %}out{% endif %}{% if not a or b %}x{% endif %}"
    "{% if a and b %}y{% endif %}{% if a|length >= 2 %}long{% endif %}"
    "{% if a is None %}none{% endif %}",
    "loops": "{% for x in a %}{{ forloop.counter }}{{ x }}{% if forloop.last %}.{% endif %}"
    "{% empty %}empty{% endfor %}{% with c=a|length %}{{ c }}{% endwith %}{% firstof a b 'z' %}"
    "{% for x in b reversed %}{% cycle 'o' 'e' %}{{ x|default:'-' }}{% endfor %}",
}

_TEXT = st.text(alphabet=st.sampled_from("ab <>&\"'é\n%0.1-"), max_size=8)
_SCALAR = st.one_of(
    _TEXT,
    st.integers(-1000, 1000),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.none(),
    st.booleans(),
)
_VALUE = st.one_of(
    _SCALAR, st.lists(_SCALAR, max_size=4), st.dictionaries(_TEXT, _SCALAR, max_size=3)
)


@pytest.fixture(scope="module")
def converted_property_templates(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("property")
    src, dest = tmp / "src", tmp / "dest"
    src.mkdir()
    for name, text in PROPERTY_TEMPLATES.items():
        (src / f"{name}.html").write_text(text, encoding="utf-8")
    files = collect(str(src), str(dest))
    job = Job("django", files={f.name: f for f in files})
    for file in files:
        result = convert_file(file, job)
        assert not result.problems
        Path(file.dest_path).parent.mkdir(parents=True, exist_ok=True)
        Path(file.dest_path).write_text(result.source, encoding="utf-8")
    return src, dest


@pytest.mark.parametrize("name", sorted(PROPERTY_TEMPLATES))
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=st.one_of(_VALUE, st.just(MISSING)), b=st.one_of(_VALUE, st.just(MISSING)))
def test_generated_contexts_render_as_django(
    converted_property_templates: tuple[Path, Path], name: str, a: Any, b: Any
) -> None:
    src, dest = converted_property_templates
    context = {key: value for key, value in (("a", a), ("b", b)) if value is not MISSING}
    django_engine = Engine(dirs=[str(src)], libraries=LIBRARIES)
    ptl_engine = PTLTemplates({"NAME": "t", "DIRS": [dest], "APP_DIRS": False, "OPTIONS": {}})
    try:
        theirs = _rendered(django_engine.get_template(f"{name}.html").render, Context(context))
        ours = _rendered(ptl_engine.get_template(f"{name}.ptl").render, dict(context))
    finally:
        ptl_engine.loader.close()
    assert ours == theirs


# -- the counts in docs/migrating.md -------------------------------------------------------------

DOC = Path(__file__).parents[2] / "docs" / "migrating.md"
COUNTS_START, COUNTS_END = "<!-- dtl-counts -->", "<!-- /dtl-counts -->"


def counts_table(tmp_path: Path) -> str:
    """The table of renders per construct: identical, reported (not converted), different."""
    counts: dict[str, Counter[str]] = {}
    for i, case in enumerate(CASES):
        src, dest, problems = convert(case, tmp_path / str(i))
        tally = counts.setdefault(case.construct, Counter())
        if problems:
            tally["reported"] += len(case.contexts)
            continue
        for theirs, ours in render_both(case, src, dest):
            tally["identical" if theirs == ours else "different"] += 1
    lines = ["| construct | identical | reported | different |", "| --- | --- | --- | --- |"]
    for construct, tally in counts.items():
        name = construct.replace("|", "\\|")
        if construct[0] in "{|":
            name = f"`{name}`"
        lines.append(
            f"| {name} | {tally['identical']} | {tally['reported']} | {tally['different']} |"
        )
    total: Counter[str] = Counter()
    for tally in counts.values():
        total.update(tally)
    lines.append(f"| all | {total['identical']} | {total['reported']} | {total['different']} |")
    return "\n".join(lines)


@pytest.mark.skipif(
    django.VERSION[:2] != (5, 2), reason="the table counts renders with Django 5.2, the dev one"
)
@override_settings(ROOT_URLCONF=__name__, STATIC_URL="/static/", MEDIA_URL="/media/")
def test_docs_counts_table_is_current(tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    start, end = text.index(COUNTS_START) + len(COUNTS_START), text.index(COUNTS_END)
    assert text[start:end].strip() == counts_table(tmp_path)


# -- as users run it -------------------------------------------------------------------------------

PROJECT_FILES = {
    "mysite/__init__.py": "",
    "mysite/settings.py": """
        SECRET_KEY = "x"
        INSTALLED_APPS = ["shop"]
        TEMPLATES = [
            {"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True}
        ]
        USE_TZ = True
    """,
    "shop/__init__.py": "",
    "shop/templatetags/__init__.py": "",
    "shop/templatetags/shop_tags.py": """
        from django import template
        from django.utils.html import format_html

        register = template.Library()

        @register.filter(is_safe=True)
        def stars(value):
            return "*" * int(value)

        @register.filter(name="price")
        def format_price(value, currency="EUR"):
            return format_html("<b>{}</b> {}", value, currency)

        @register.simple_tag
        def shout(text, end="!"):
            return text.upper() + end

        class LegacyNode(template.Node):
            def render(self, context):
                return "legacy"

        @register.tag
        def legacy(parser, token):
            return LegacyNode()
    """,
    "shop/extra_filters.py": """
        def reverse_text(value):
            return str(value)[::-1]
    """,
    "dtl/item.html": """\
        {% load shop_tags %}<p>{{ item.name|reverse_text }} {{ item.rating|stars }}
        {{ item.price|price:"<USD>" }}</p>
    """,
    "dtl/list.html": '{% for item in items %}{% include "item.html" %}{% endfor %}\n',
    "dtl/tags.html": '{% load shop_tags %}{% shout "<hi>" end="?" %}{% legacy %}\n',
    "dtl/shout.html": "{% load shop_tags %}{% shout name %}|"
    '{% shout "<hi>" end=name as s %}{{ s }}',
    "compare.py": """
        import django, os
        os.environ["DJANGO_SETTINGS_MODULE"] = "mysite.settings"
        django.setup()
        from django.template import Context, Engine, RequestContext
        from ptl_wsgi.idioms import NotConvertedError
        from ptl_wsgi.loader import Loader
        from shop.extra_filters import reverse_text

        context = {"items": [{"name": "<abc>", "rating": 3, "price": 5}]}
        engine = Engine(dirs=["dtl"], libraries={"shop_tags": "shop.templatetags.shop_tags"})
        engine.template_builtins[0].filters["reverse_text"] = reverse_text
        print(engine.get_template("list.html").render(Context(context)), end="")
        print(Loader(["templates"]).render("list.ptl", context), end="")
        print(engine.get_template("shout.html").render(Context({"name": "<b>"})))
        print(Loader(["templates"]).render("shout.ptl", {"name": "<b>"}))
        try:
            Loader(["templates"]).render("tags.ptl", {})
        except NotConvertedError as exc:
            print(exc)
    """,
}


def run_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptl_wsgi", "convert", *args],
        cwd=cwd,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_converts_a_project_with_its_libraries_and_reports_the_rest(tmp_path: Path) -> None:
    write_files(tmp_path, PROJECT_FILES)
    result = run_cli(
        tmp_path,
        "--from-django", "dtl", "--output", "templates",
        "--settings", "mysite.settings", "--filters", "shop.extra_filters",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        "tags.html:1: {% legacy %}: a custom tag (shop.templatetags.shop_tags): write it in PTL",
        "converted 4 templates into templates; 1 not converted (TODO in the output)",
    ]
    compared = subprocess.run(
        [sys.executable, "compare.py"],
        cwd=tmp_path,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    page = ["<p>&gt;cba&lt; ***", "<b>5</b> <USD></p>", ""]  # a literal argument is safe
    shout = "&lt;B&gt;!|&lt;HI&gt;&lt;b&gt;"  # a simple_tag's result is escaped, as in Django
    assert compared.stdout.replace("&#x27;", "'").splitlines() == [
        *page,
        *page,
        shout,
        shout,
        "not converted: tags.html:1: {% legacy %}: a custom tag (shop.templatetags.shop_tags): "
        "write it in PTL",
    ], compared.stderr


def test_cli_without_the_settings_reports_the_library_and_its_filters(tmp_path: Path) -> None:
    write_files(tmp_path, PROJECT_FILES)
    result = run_cli(tmp_path, "--from-django", "dtl/item.html", "--output", "out")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "item.html:1: {% load shop_tags %}: unknown tag library 'shop_tags' "
        "(give the project's settings: --settings)",
        "item.html:1: |reverse_text: unknown filter (name its module with --filters)",
        "item.html:1: |stars: unknown filter (name its module with --filters)",
        "item.html:2: |price: unknown filter (name its module with --filters)",
        "converted 1 template into out; 4 not converted (TODO in the output)",
    ]


VOTE_TEMPLATE = """\
<h1>{{ question.text }}</h1>
<form action="{% url 'vote' %}" method="post">{% csrf_token %}
<input type="radio" name="choice" value="{{ question.id }}">
</form>
"""


def test_a_converted_template_in_a_django_app_passes_csrf(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "vote.html").write_text(VOTE_TEMPLATE, encoding="utf-8")
    from ptl_wsgi.tools.converting import convert_tree

    assert convert_tree(str(tmp_path / "src"), str(tmp_path / "dest"), "django") == 0
    templates = [
        {
            "BACKEND": "ptl_wsgi.contrib.django.PTLTemplates",
            "NAME": "ptl",
            "DIRS": [tmp_path / "dest"],
        }
    ]
    with override_settings(ROOT_URLCONF=__name__, TEMPLATES=templates):
        client = Client(enforce_csrf_checks=True)
        page = client.get("/vote/")
        assert page.status_code == 200
        text = page.content.decode()
        assert "<h1>Tea &amp; &lt;cake&gt;?</h1>" in text
        assert '<form action="/vote/" method="post">' in text
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', text)
        assert token is not None
        assert client.post("/vote/", {"choice": "7"}).status_code == 403  # no token: refused
        voted = client.post("/vote/", {"choice": "7", "csrfmiddlewaretoken": token.group(1)})
        assert voted.content == b"voted 7"


@pytest.mark.parametrize("language", ["fr", "de"])
@override_settings(ROOT_URLCONF=__name__)
def test_translations_come_from_djangos_catalogs(language: str, tmp_path: Path) -> None:
    """translate, blocktranslate and _() use the active language's catalogs, as in Django."""
    from django.utils import translation

    case = Case(
        "i18n",
        {
            "main.html": "{% load i18n %}{% translate 'Yes' %}|{{ _('No') }}|"
            "{% translate 'May' context 'abbrev. month' %}|{% translate 'Yes' as yes %}{{ yes }}|"
            "{% blocktranslate %}Yes{% endblocktranslate %}|{{ v|yesno }}"
        },
        [{"v": True}],
    )
    with translation.override(language):
        result, detail = outcome(case, tmp_path)
        assert result == "identical", detail
        src, dest, _ = convert(case, tmp_path / "again")
        [(theirs, _)] = render_both(case, src, dest)
    assert "Yes" not in theirs  # translated: the comparison is not of English alone


TEXT_TEMPLATES = {
    "main.txt": "{% extends 'base.txt' %}{% block body %}Hi {{ name }} & {{ name|linebreaks }}"
    "{% include 'sig.txt' %}{% endblock %}",
    "base.txt": "Subject: {{ subject }}\n{% block body %}{% endblock %}\n",
    "sig.txt": "-- {{ name|urlize }} {{ site }}",
    "plain.txt": "{{ name }} {{ name|join:'-' }} {% autoescape on %}{{ name }}{% endautoescape %}",
}


def test_text_templates_with_autoescape_off_render_as_django_without_escaping(
    tmp_path: Path,
) -> None:
    """``--autoescape off``: [plain] templates, and filters and includes that do not escape."""
    src, dest = tmp_path / "src", tmp_path / "dest"
    write_files(src, TEXT_TEMPLATES)
    files = collect(str(src), str(dest))
    job = Job("django", autoescape="off", files={f.name: f for f in files})
    for file in files:
        result = convert_file(file, job)
        assert not result.problems
        assert "def render [plain]" in result.source
        Path(file.dest_path).parent.mkdir(parents=True, exist_ok=True)
        Path(file.dest_path).write_text(result.source, encoding="utf-8")
    django_engine = Engine(dirs=[str(src)], autoescape=False)
    loader = Loader([str(dest)])
    context = {"name": "<Ann & www.example.com>", "subject": "R&D <news>", "site": "a&b"}
    pages = []
    for name in ("main", "plain"):
        theirs = django_engine.get_template(f"{name}.txt").render(
            Context(context, autoescape=False)
        )
        ours = loader.render(f"{name}.ptl", context)
        assert str(ours) == theirs
        pages.append(theirs)
    assert pages[0].startswith("Subject: R&D <news>\nHi <Ann & www.example.com>")  # as in a mail


def test_templates_of_other_folders_are_found_as_the_engine_finds_them(tmp_path: Path) -> None:
    """An app's templates extend and include the project's, converted on their own."""
    write_files(
        tmp_path,
        {
            "project/base.html": "<title>{% block title %}Site{% endblock %}</title>"
            "{% block body %}{% endblock %}",
            "project/partials/nav.html": "<nav>{{ user }}</nav>",
            "app/polls/page.html": "{% extends 'base.html' %}{% block title %}Polls | "
            "{{ block.super }}{% endblock %}{% block body %}{% include 'partials/nav.html' %}"
            "{% include 'polls/none.html' %}{% endblock %}",
        },
    )
    for folder in ("project", "app"):
        files = collect(str(tmp_path / folder), str(tmp_path / "ptl" / folder))
        job = Job("django", files={f.name: f for f in files})
        for file in files:
            result = convert_file(file, job)
            assert result.problems == []  # names outside the folder are the engine's to find
            Path(file.dest_path).parent.mkdir(parents=True, exist_ok=True)
            Path(file.dest_path).write_text(result.source, encoding="utf-8")
    django_engine = Engine(dirs=[str(tmp_path / "app"), str(tmp_path / "project")])
    loader = Loader([tmp_path / "ptl" / "app", tmp_path / "ptl" / "project"])
    context = {"user": "<Ann>"}
    from django.template import TemplateDoesNotExist

    with pytest.raises(TemplateDoesNotExist):
        django_engine.get_template("polls/page.html").render(Context(context))
    with pytest.raises(TemplateDoesNotExist, match=r"polls/none\.ptl"):
        loader.render("polls/page.ptl", context)
    (tmp_path / "project" / "polls").mkdir()
    (tmp_path / "project" / "polls" / "none.html").write_text("!", encoding="utf-8")
    (tmp_path / "ptl" / "project" / "polls").mkdir()
    (tmp_path / "ptl" / "project" / "polls" / "none.ptl").write_text(
        "def render [html] (**context):\n    '!'\n", encoding="utf-8"
    )
    django_engine = Engine(dirs=[str(tmp_path / "app"), str(tmp_path / "project")])  # uncached
    theirs = django_engine.get_template("polls/page.html").render(Context(context))
    ours = str(
        Loader([tmp_path / "ptl" / "app", tmp_path / "ptl" / "project"]).render(
            "polls/page.ptl", context
        )
    )
    assert ours == theirs == "<title>Polls | Site</title><nav>&lt;Ann&gt;</nav>!"


# -- generated templates -----------------------------------------------------------------------

_NAMES = st.sampled_from(["a", "b", "items", "d", "missing"])
_FILTERS = st.sampled_from(
    ["upper", "length", "default:'-'", "join:','", "first", "last", "yesno", "add:1",
     "default_if_none:'n'", "slice:':2'", "escape", "safe", "title", "pluralize", "floatformat"]
)  # fmt: skip
_EXPRESSIONS = st.builds(
    lambda name, path, filters: name + path + "".join("|" + f for f in filters),
    _NAMES,
    st.sampled_from(["", ".0", ".k", ".items", ".upper"]),
    st.lists(_FILTERS, max_size=2),
)
_CONDITIONS = st.one_of(
    _EXPRESSIONS,
    st.builds(
        lambda a, op, b: f"{a} {op} {b}",
        _EXPRESSIONS,
        st.sampled_from(["==", "!=", "<", ">=", "in", "not in", "and", "or", "is"]),
        st.one_of(_EXPRESSIONS, st.sampled_from(["1", "'x'", "None"])),
    ),
    st.builds(lambda e: "not " + e, _EXPRESSIONS),
)


def _templates(depth: int) -> st.SearchStrategy[str]:
    text = st.one_of(
        st.text(alphabet=st.sampled_from("ab &>'\"\n"), max_size=4),
        st.sampled_from(["<b>", "</b>", "<p title='x'>", "</p>", "<br>"]),
    )
    leaf = st.one_of(
        text,
        st.builds(lambda e: "{{ " + e + " }}", _EXPRESSIONS),
        st.builds(lambda e: '<i title="{{ ' + e + ' }}">', _EXPRESSIONS),
        st.builds(
            lambda c, e, x: (
                "<i{% if " + c + ' %} title="{{ ' + e + ' }}"{% else %} lang=x{% endif %}' + x + ">"
            ),
            _CONDITIONS,
            _EXPRESSIONS,
            st.sampled_from(["", " class=c", "{% if a %} hidden{% endif %}"]),
        ),
        st.builds(lambda a, b: "{% firstof " + a + " " + b + " %}", _EXPRESSIONS, _EXPRESSIONS),
        st.just("{% cycle 'odd' 'even' %}"),
        st.builds(
            lambda e: "{% ifchanged " + e + " %}c{% else %}s{% endifchanged %}", _EXPRESSIONS
        ),
    )
    if depth == 0:
        return leaf
    inner = st.lists(_templates(depth - 1), max_size=3).map("".join)
    return st.one_of(
        leaf,
        st.builds(_if_tag, _CONDITIONS, inner, inner),
        st.builds(_for_tag, _EXPRESSIONS, inner, inner),
        st.builds(_with_tag, _EXPRESSIONS, inner),
        st.builds(lambda f, x: "{% filter " + f + " %}" + x + "{% endfilter %}",
                  st.sampled_from(["upper", "lower|capfirst", "force_escape"]), inner),
        st.builds(lambda x: "{% spaceless %}" + x + "{% endspaceless %}", inner),
        st.builds(lambda x: "{% autoescape off %}" + x + "{% endautoescape %}", inner),
    )  # fmt: skip


def _if_tag(condition: str, body: str, orelse: str) -> str:
    return "{% if " + condition + " %}" + body + "{% else %}" + orelse + "{% endif %}"


def _for_tag(values: str, body: str, empty: str) -> str:
    return (
        "{% for v in " + values + " %}{{ v }}{{ forloop.counter }}" + body
        + "{% empty %}" + empty + "{% endfor %}"
    )  # fmt: skip


def _with_tag(value: str, body: str) -> str:
    return "{% with w=" + value + " %}{{ w }}" + body + "{% endwith %}"


GENERATED_CONTEXTS = [
    {"a": "x&<y>", "b": 2, "items": ["p", "<q>"], "d": {"k": "v&", "items": 3}},
    {"a": "", "b": None, "items": [], "d": {}},
    {"a": 0, "b": "x", "items": "ab", "d": {"k": None}},
]


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=st.lists(_templates(2), min_size=1, max_size=3).map("".join))
def test_generated_templates_render_as_django(
    tmp_path_factory: pytest.TempPathFactory, source: str
) -> None:
    case = Case("generated", {"main.html": source}, GENERATED_CONTEXTS)
    result, detail = outcome(case, tmp_path_factory.mktemp("generated"))
    assert result == "identical", (source, detail)
