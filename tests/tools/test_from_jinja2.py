"""The Jinja2 converter, differentially: the corpus rendered by Jinja2 and, converted, by PTL."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import jinja2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jinja2_corpus import CASES, FLASK_TEMPLATES, Case, contexts
from jinja2_corpus_filters import SITE_NAME, shout, small

from ptl_wsgi.idioms import NotConvertedError
from ptl_wsgi.loader import Loader
from ptl_wsgi.tools.converting import convert_tree, ptl_name

REPO = Path(__file__).parents[2]

# Spellings of the same character: Jinja2 (markupsafe) writes &#34; and &#39;; |upper of
# escaped text gives &QUOT; and &#X27;, which HTML reads as the same characters.
SPELLINGS = {"&#34;": "&quot;", "&#39;": "&#x27;", "&#x22;": "&quot;", "&#60;": "&lt;",
             "&#62;": "&gt;", "&#38;": "&amp;", "&QUOT;": "&quot;", "&#X27;": "&#x27;",
             "&#X22;": "&quot;"}  # fmt: skip


def normalise(page: str) -> str:
    return re.sub("|".join(SPELLINGS), lambda m: SPELLINGS[m.group()], page)


def jinja_environment(case: Case) -> jinja2.Environment:
    from ptl_wsgi.tools.from_jinja2 import environment_options

    env = jinja2.Environment(
        **environment_options(case.options),
        loader=jinja2.DictLoader(case.templates),
        autoescape=jinja2.select_autoescape(["html", "htm", "xml", "xhtml", "svg"], default=False),
        extensions=["jinja2.ext.i18n", "jinja2.ext.do", "jinja2.ext.loopcontrols"],
    )
    env.install_null_translations(newstyle=True)  # type: ignore[attr-defined]
    if case.filters:
        env.filters["shout"] = shout
        env.tests["small"] = small
        env.globals["SITE_NAME"] = SITE_NAME
    return env


def theirs(case: Case, context: dict[str, Any]) -> str | type[BaseException]:
    try:
        return jinja_environment(case).get_template(case.main).render(context)
    except Exception as exc:
        return type(exc)


def convert(case: Case, root: Path) -> tuple[Loader, int, str]:
    src, dest = root / "src", root / "out"
    for name, source in case.templates.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(source, encoding="utf-8")
    import io

    report = io.StringIO()
    status = convert_tree(
        str(src), str(dest), "jinja2", filters=case.filters, options=case.options, out=report
    )
    return Loader([str(dest)]), status, report.getvalue()


def ours(loader: Loader, case: Case, context: dict[str, Any]) -> str | type[BaseException]:
    try:
        return str(loader.render(ptl_name(case.main), context))
    except Exception as exc:
        return type(exc)


def outcome(case: Case, root: Path) -> str:
    """``identical``, ``reported`` or ``documented`` as the case's conversion did; asserts."""
    loader, status, report = convert(case, root)
    results = []
    for context in contexts():
        context = {**context, **case.extra}
        results.append((theirs(case, context), ours(loader, case, context)))
    if status:
        # Reported: never silently wrong, a render reaching it fails loudly.
        assert report.count(f"{case.main}:") >= 1, report
        assert all(o is NotConvertedError or o == t for t, o in results), results
        assert any(o is NotConvertedError for _, o in results), results
        return "reported"
    assert report.startswith("converted"), report
    if all(isinstance(t, str) and isinstance(o, str) and normalise(t) == normalise(o)
           for t, o in results):  # fmt: skip
        return "identical"
    # Documented: where the pages differ, ours escaped more (or rendered where Jinja2's
    # default Undefined raises); never an error of ours.
    for t, o in results:
        assert isinstance(o, str), (o, t)
        if isinstance(t, str) and normalise(t) != normalise(o):
            assert case.ours in o and case.ours not in t, (t, o)
    return "documented"


@pytest.mark.parametrize("case", CASES, ids=[f"{c.construct}-{i}" for i, c in enumerate(CASES)])
def test_the_corpus_converts_as_each_case_says(case: Case, tmp_path: Path) -> None:
    assert outcome(case, tmp_path) == case.expect


def test_the_docs_table_has_the_counts() -> None:
    """docs/migrating.md keeps identical/reported/documented counts per construct."""
    counts: dict[str, Counter[str]] = {}
    for case in CASES:
        counts.setdefault(_group(case.construct), Counter())[case.expect] += 1
    page = (REPO / "docs" / "migrating.md").read_text(encoding="utf-8")
    table = page.split("## Converting Jinja2 templates", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| (.+?) \| (\d+ \| \d+ \| \d+) \|$", table, re.MULTILINE))
    expected = {
        group: f"{c['identical']} | {c['reported']} | {c['documented']}"
        for group, c in counts.items()
    }
    assert rows == expected


def _group(construct: str) -> str:
    return (
        "builtin filters"
        if construct.startswith("filter ") and construct != "filter block"
        else construct
    )


@settings(max_examples=30, deadline=None)
@given(
    name=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12),
    items=st.lists(st.text(alphabet="ab<>&\"' ", max_size=4), max_size=4),
    n=st.integers(-3, 30),
)
def test_generated_contexts_render_alike(tmp_path_factory: pytest.TempPathFactory, name: str,
                                         items: list[str], n: int) -> None:  # fmt: skip
    case = Case("generated", {"page.html": GENERATED})
    loader = _generated_loader(tmp_path_factory)
    context = {**contexts()[0], "name": name, "items": items, "n": n}
    assert normalise(str(ours(loader, case, context))) == normalise(str(theirs(case, context)))


GENERATED = (
    '<p title="{{ name }}">{{ name|title }} {{ name|upper }} {{ name|length }} {{ name|trim }}</p>'
    "{% for i in items|sort %}{{ loop.index }}{{ i|e }}{{ i|replace('a', '<') }}{% else %}-"
    "{% endfor %}{{ items|join('&') }} {{ items|unique|list|length }} {{ n|filesizeformat }}"
    " {{ name|truncate(9) }} {{ name|wordcount }} {{ (name ~ n)|center(30) }} {{ n is odd }}"
    " {{ name|default('d', true) }} {{ items|map('length')|sum }} {{ name|striptags }}"
)

_loaders: dict[str, Loader] = {}


def _generated_loader(factory: pytest.TempPathFactory) -> Loader:
    if "g" not in _loaders:
        _loaders["g"] = convert(Case("generated", {"page.html": GENERATED}), factory.mktemp("gen"))[
            0
        ]
    return _loaders["g"]


def test_a_converted_flask_app_serves_the_same_pages(tmp_path: Path) -> None:
    """A Flask app of ours (jinja2_corpus.FLASK_TEMPLATES) converted as users run the converter."""
    import subprocess
    import sys

    import flask

    from ptl_wsgi.contrib.flask import PTL

    for name, source in FLASK_TEMPLATES.items():
        (tmp_path / "templates" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "templates" / name).write_text(source, encoding="utf-8")
    command = ["convert", "--from-jinja2", "templates", "--output", "templates"]
    result = subprocess.run(
        [sys.executable, "-m", "ptl_wsgi", *command],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0 and result.stderr == "converted 3 templates into templates\n"
    app = flask.Flask("notes", root_path=str(tmp_path))
    app.secret_key = "test"
    PTL(app)
    notes = [
        {"id": 1, "title": "tea & <cake>", "body": "word " * 20, "author": 1, "tags": ["a", "<b>"]},
        {"id": 2, "title": "second", "body": "short", "author": 2, "tags": []},
    ]

    @app.before_request
    def load_user() -> None:
        flask.g.user = {"id": 1, "name": "<ann>"} if flask.request.args.get("user") else None

    @app.route("/", methods=["GET", "POST"])
    def index() -> str:
        if flask.request.method == "POST":
            flask.flash("Saved <it>")
        engine = flask.request.args.get("engine", "html")
        shown = notes if flask.request.args.get("notes") else []
        return flask.render_template(f"notes/list.{engine}", notes=shown, owner="<ann>")

    client = app.test_client()
    for query in ["", "user=1", "notes=1", "user=1&notes=1"]:
        for method in ("GET", "POST"):
            theirs = client.open(f"/?{query}", method=method, data={"title": 'a"b'})
            ours = client.open(f"/?{query}&engine=ptl", method=method, data={"title": 'a"b'})
            assert theirs.status_code == ours.status_code == 200
            assert normalise(ours.text) == normalise(theirs.text), (query, method)


URL_PARTS = st.sampled_from(
    ["http://", "https://", "www.", "a", "b.com", ".", ",", "(", ")", "<", ">", "@", "x.org",
     " ", "\n", "mailto:", "&", "/", "?q=1", ":80", "-", "1.2.3.4", "'", '"', "ftp:", "%"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(text=st.lists(URL_PARTS, max_size=10).map("".join))
def test_urlize_links_what_jinja2s_links(text: str) -> None:
    from ptl_wsgi.filters import jinja2 as jinja

    env = jinja2.Environment(autoescape=True)
    template = "{{ x|urlize }}|{{ x|urlize(10, true, '_blank') }}|{{ x|urlize(rel='me') }}"
    theirs = env.from_string(template).render(x=text)
    ours = "|".join(
        str(page)
        for page in (
            jinja.urlize(text, escaping=True),
            jinja.urlize(text, 10, True, "_blank", escaping=True),
            jinja.urlize(text, rel="me", escaping=True),
        )
    )
    assert normalise(ours) == normalise(theirs)


def test_engine_options_that_jinja2_has_not_are_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ptl_wsgi.cli import main as cli_main

    (tmp_path / "a.html").write_text("x")
    out = str(tmp_path / "out")
    for option, message in [
        ("nope=1", "--engine-option nope: Jinja2's options are trim_blocks"),
        ("trim_blocks=maybe", "--engine-option trim_blocks: give true or false, not 'maybe'"),
    ]:
        args = ["convert", "--from-jinja2", str(tmp_path), "-o", out, "--engine-option", option]
        assert cli_main(args) == 2
        assert message in capsys.readouterr().err


def test_a_file_that_is_not_text_is_reported_and_the_others_converted(tmp_path: Path) -> None:
    import io

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "logo.png").write_bytes(b"\x89PNG\xff\xfe")
    (tmp_path / "src" / "page.html").write_text("<p>{{ x }}</p>")
    report = io.StringIO()
    assert convert_tree(str(tmp_path / "src"), str(tmp_path / "out"), "jinja2", out=report) == 1
    assert report.getvalue().startswith("logo.png:1: template: not UTF-8 text")
    assert Loader([str(tmp_path / "out")]).render("page.ptl", {"x": "<"}) == "<p>&lt;</p>"
