"""Django templates against the same templates converted by ``ptl-wsgi convert --from-django``.

Run from the repository root::

    .venv/bin/python benchmarks/from_django.py [--rounds N] [--write]

A polls site's templates (a layout with blocks and ``{{ block.super }}``, a results page
looping over questions and their choices with ``forloop``, ``{% cycle %}``, ``{% url %}``,
``{% empty %}``, ``{% with %}`` and filters) are written to a temporary folder, converted
with the converter's own function, and rendered by Django's engine and by PTL through a
``Loader``, with 10 and 100 questions.  The pages are checked to be the same before
anything is timed; rounds are interleaved and each figure is the median of its rounds.
``--write`` puts the table in RESULTS.md.  No target: the figures say what the converted
form costs, which resolves every variable as Django does (``dj.var``) and shows every
value as Django does (``dj.show``: time zone, localisation).
"""

from __future__ import annotations

import argparse
import gc
import io
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _results import interleaved, write_section  # noqa: E402

SECTION = "## Django templates converted to PTL"

TEMPLATES = {
    "base.html": """<!doctype html>
<title>{% block title %}Polls{% endblock %}</title>
<nav><a href="{% url 'index' %}">Polls</a>{% if user %} <span>{{ user }}</span>{% endif %}</nav>
<main>{% block content %}{% endblock %}</main>
""",
    "polls/results.html": """{% extends "base.html" %}
{% block title %}Results | {{ block.super }}{% endblock %}
{% block content %}
{% for question in questions %}
  <section class="{% cycle 'odd' 'even' %}" id="q{{ forloop.counter }}">
    <h2><a href="{% url 'detail' question.id %}">{{ question.text|capfirst }}</a></h2>
    {% with total=question.choices|length %}
    <p>{{ total }} choice{{ total|pluralize }}</p>{% endwith %}
    <ul>
    {% for choice in question.choices %}
      <li>{{ choice.text }} -- {{ choice.votes }} vote{{ choice.votes|pluralize }}</li>
    {% empty %}
      <li>No choices.</li>
    {% endfor %}
    </ul>
  </section>
{% empty %}
  <p>No polls are available.</p>
{% endfor %}
{% endblock %}
""",
}


def index(request: Any) -> Any:  # (the URLs the templates reverse)
    raise NotImplementedError


urlpatterns: list[Any] = []


def configure() -> None:
    import django
    from django.conf import settings
    from django.urls import path

    settings.configure(
        ROOT_URLCONF=__name__,
        USE_TZ=True,
        TEMPLATES=[{"BACKEND": "django.template.backends.django.DjangoTemplates"}],
    )
    django.setup()
    urlpatterns.extend([path("", index, name="index"), path("<int:pk>/", index, name="detail")])


def context(questions: int) -> dict[str, Any]:
    return {
        "questions": [
            {
                "id": i,
                "text": f"question <{i}> & more?",
                "choices": [{"text": f"choice {j} & <x>", "votes": j} for j in range(i % 4)],
            }
            for i in range(questions)
        ],
        "user": "ann",
    }


def functions() -> dict[str, Callable[[], Any]]:
    from django.template import Context, Engine

    from ptl_wsgi.loader import Loader
    from ptl_wsgi.tools.converting import convert_tree

    folder = Path(tempfile.mkdtemp(prefix="ptl-from-django-"))
    for name, source in TEMPLATES.items():
        (folder / "dtl" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "dtl" / name).write_text(source, encoding="utf-8")
    report = io.StringIO()
    if convert_tree(str(folder / "dtl"), str(folder / "ptl"), "django", out=report):
        raise SystemExit(f"not converted:\n{report.getvalue()}")
    django_template = Engine(dirs=[str(folder / "dtl")]).get_template("polls/results.html")
    ptl_template = Loader([str(folder / "ptl")]).get_template("polls/results.ptl")
    found: dict[str, Callable[[], Any]] = {}
    for questions in (10, 100):
        values = context(questions)
        theirs = django_template.render(Context(values)).replace("&#x27;", "&#39;")
        if theirs != str(ptl_template.render(values)).replace("&#x27;", "&#39;"):
            raise SystemExit(f"{questions} questions: the converted template renders differently")
        found[f"{questions} Django"] = lambda v=values: django_template.render(Context(v))
        found[f"{questions} PTL"] = lambda v=values: ptl_template.render(v)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.2, help="per call and round")
    parser.add_argument("--write", action="store_true", help="put the table in RESULTS.md")
    args = parser.parse_args()
    configure()
    calls = functions()
    gc.collect()
    rounds = interleaved(calls, args.rounds, args.seconds)
    times = {name: statistics.median(values) for name, values in rounds.items()}
    lines = [
        "| questions | Django | converted PTL | PTL / Django |",
        "| ---: | ---: | ---: | ---: |",
    ]
    for questions in (10, 100):
        theirs, ours = times[f"{questions} Django"], times[f"{questions} PTL"]
        lines.append(
            f"| {questions} | {theirs * 1e3:.3f} ms | {ours * 1e3:.3f} ms | {ours / theirs:.2f}x |"
        )
    print("\n".join(lines))
    if args.write:
        import ptl_wsgi

        rounds_option = f" --rounds {args.rounds}" if args.rounds != 5 else ""
        command = f"python benchmarks/from_django.py{rounds_option} --write"
        write_section(
            SECTION,
            [
                SECTION,
                "",
                f"`{command}` (Python {sys.version.split()[0]}, ptl_wsgi {ptl_wsgi.__version__}, "
                f"{ptl_wsgi.IMPLEMENTATION} twin, Django {_version('django')}; medians of "
                "interleaved rounds). A polls results page (a layout with blocks and "
                "`{{ block.super }}`, nested loops with `forloop`, `{% cycle %}`, `{% url %}`, "
                "`{% with %}`, `{% empty %}`, filters) rendered by Django's engine, and "
                "converted by `ptl-wsgi convert --from-django` and rendered by a `Loader`; the "
                "pages are checked to be the same first. The converted form resolves every "
                "variable through `dj.var()` and shows every value through `dj.show()` "
                "(Django's lookups, time zone and localisation).",
                "",
                *lines,
            ],
        )
    return 0


def _version(distribution: str) -> str:
    from importlib.metadata import version

    return version(distribution)


if __name__ == "__main__":
    sys.exit(main())
