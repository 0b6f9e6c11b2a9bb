"""Jinja2 templates against the same templates converted by ``ptl-wsgi convert --from-jinja2``.

Run from the repository root::

    .venv/bin/python benchmarks/from_jinja2.py [--rounds N] [--write]

A blog's templates (a layout with blocks and flashed messages, an index page looping over
posts with a macro, filters, ``loop.*`` and lenient lookups such as ``g.user['id']``) are
written to a temporary folder, converted with the converter's own function, and rendered
by Jinja2 (autoescaping, as Flask sets it) and by PTL through a ``Loader``, with 10 and 100
posts.  The pages are checked to be the same before anything is timed; rounds are
interleaved and each figure is the median of its rounds.  ``--write`` puts the table in
RESULTS.md.  No target: the figures say what the converted form costs, whose lenient
lookups (``dot()``, ``at()``) are calls where Jinja2 compiles its own.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import io
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _results import interleaved, write_section  # noqa: E402

SECTION = "## Jinja2 templates converted to PTL"

TEMPLATES = {
    "base.html": """<!doctype html>
<title>{% block title %}{% endblock %} - Blog</title>
<nav><a href="{{ url_for('index') }}">Blog</a>
{% if g.user %}<span>{{ g.user['name'] }}</span>
{% else %}<a href="{{ url_for('login') }}">Log in</a>{% endif %}</nav>
{% for message in get_flashed_messages() %}<p class="flash">{{ message }}</p>{% endfor %}
<main>{% block header %}<h1>{{ self.title() }}</h1>{% endblock %}
{% block content %}{% endblock %}</main>
""",
    "_macros.html": """{% macro tags(post) -%}
<ul class="tags">{% for tag in post.tags %}<li>{{ tag|lower }}</li>{% endfor %}</ul>
{%- endmacro %}""",
    "index.html": """{% extends "base.html" %}
{% from "_macros.html" import tags %}
{% block title %}Posts{% endblock %}
{% block content %}
{% for post in posts %}
  <article class="{{ loop.cycle('odd', 'even') }}" id="post-{{ post['id'] }}">
    <h2><a href="{{ url_for('show', id=post['id']) }}">{{ post['title']|title }}</a></h2>
    <p class="about">by {{ post['author'] }} on {{ post['created'].strftime('%Y-%m-%d') }}</p>
    {% if g.user['id'] == post['author_id'] -%}
      <a href="{{ url_for('edit', id=post['id']) }}">Edit</a>
    {%- endif %}
    <p>{{ post['body']|truncate(80) }}</p>
    {{ tags(post) }}
  </article>
  {% if not loop.last %}<hr>{% endif %}
{% else %}
  <p>No posts.</p>
{% endfor %}
{% endblock %}
""",
}


def context(posts: int) -> dict[str, Any]:
    return {
        "posts": [
            {
                "id": i,
                "title": f"post <{i}> & more",
                "author": "ann",
                "author_id": i % 3,
                "created": datetime.date(2026, 1, 1 + i % 28),
                "body": "Lorem ipsum dolor sit amet, consectetur adipiscing elit " * 3,
                "tags": ["Tea", "Cake & <Co>"],
            }
            for i in range(posts)
        ],
        "g": SimpleNamespace(user={"id": 1, "name": "ann"}),
        "url_for": lambda endpoint, **values: f"/{endpoint}/{values.get('id', '')}",
        "get_flashed_messages": lambda: ["Saved."],
    }


def functions() -> dict[str, Callable[[], Any]]:
    import jinja2

    from ptl_wsgi.loader import Loader
    from ptl_wsgi.tools.converting import convert_tree

    folder = Path(tempfile.mkdtemp(prefix="ptl-from-jinja2-"))
    for name, source in TEMPLATES.items():
        (folder / "jinja" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "jinja" / name).write_text(source, encoding="utf-8")
    report = io.StringIO()
    if convert_tree(str(folder / "jinja"), str(folder / "ptl"), "jinja2", out=report):
        raise SystemExit(f"not converted:\n{report.getvalue()}")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(folder / "jinja"), autoescape=True)
    jinja_template = env.get_template("index.html")
    ptl_template = Loader([str(folder / "ptl")]).get_template("index.ptl")
    found: dict[str, Callable[[], Any]] = {}
    for posts in (10, 100):
        values = context(posts)
        theirs = jinja_template.render(values).replace("&#39;", "&#x27;").replace("&#34;", "&quot;")
        if theirs != str(ptl_template.render(values)):
            raise SystemExit(f"{posts} posts: the converted template renders differently")
        found[f"{posts} Jinja2"] = lambda v=values: jinja_template.render(v)
        found[f"{posts} PTL"] = lambda v=values: ptl_template.render(v)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.2, help="per call and round")
    parser.add_argument("--write", action="store_true", help="put the table in RESULTS.md")
    args = parser.parse_args()
    calls = functions()
    gc.collect()
    rounds = interleaved(calls, args.rounds, args.seconds)
    times = {name: statistics.median(values) for name, values in rounds.items()}
    lines = ["| posts | Jinja2 | converted PTL | PTL / Jinja2 |", "| ---: | ---: | ---: | ---: |"]
    for posts in (10, 100):
        jinja, ptl = times[f"{posts} Jinja2"], times[f"{posts} PTL"]
        lines.append(
            f"| {posts} | {jinja * 1e3:.3f} ms | {ptl * 1e3:.3f} ms | {ptl / jinja:.2f}x |"
        )
    print("\n".join(lines))
    if args.write:
        import ptl_wsgi

        rounds_option = f" --rounds {args.rounds}" if args.rounds != 5 else ""
        command = f"python benchmarks/from_jinja2.py{rounds_option} --write"
        write_section(
            SECTION,
            [
                SECTION,
                "",
                f"`{command}` (Python {sys.version.split()[0]}, ptl_wsgi {ptl_wsgi.__version__}, "
                f"{ptl_wsgi.IMPLEMENTATION} twin, Jinja2 {_version('jinja2')}; medians of "
                "interleaved rounds). A blog's index page (a layout with blocks, a macro, "
                "filters, `loop.*`, `g.user['id']`) rendered by Jinja2 with autoescaping, and "
                "converted by `ptl-wsgi convert --from-jinja2` and rendered by a `Loader`; the "
                "pages are checked to be the same first. The converted form reads every "
                "attribute and item through `dot()`/`at()` (Jinja2's lenient lookups) and "
                "every context name through `self.get()`.",
                "",
                *lines,
            ],
        )
    return 0


def _version(distribution: str) -> str:
    from importlib.metadata import version

    return version(distribution)


if __name__ == "__main__":
    raise SystemExit(main())
