# ruff: noqa: E501 (templates are clearer on one line each)
"""Django templates covering every tag and builtin filter, with contexts to render them in.

tests/tools/test_from_django.py renders each case with Django's engine and, converted by
``ptl-wsgi convert --from-django``, with ptl_wsgi's Django engine, and compares.
Each case names the construct it covers (the rows of the table in docs/migrating.md).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import django
from django.utils.safestring import mark_safe


class Thing:
    """An object with attributes, a method, a property and a method that alters data."""

    def __init__(self, name: Any, **more: Any) -> None:
        self.name = name
        self.__dict__.update(more)

    def upper_name(self) -> str:
        return str(self.name).upper()

    def delete(self) -> str:
        return "deleted!"

    delete.alters_data = True  # type: ignore[attr-defined]

    def __str__(self) -> str:
        return f"Thing {self.name}"


HOSTILE = "<script>alert('x') & \"y\"</script>"
WHEN = datetime.datetime(2026, 3, 4, 15, 6, 7, tzinfo=datetime.timezone.utc)
DAY = datetime.date(2026, 3, 4)

TEXTS = ["plain", HOSTILE, "", "two words here", "ÉTÉ à Noël"]
VALUES: list[Any] = [*TEXTS, 0, 1, 2, -3, 1.5, 2.675, Decimal("3.14159"), None, True, False]
SEQUENCES: list[Any] = [[], ["a", "<b>", "c"], [3, 1, 2], ("x",), "abc"]


@dataclass
class Case:
    """Templates (``main.html`` is rendered) and the contexts to render them in."""

    construct: str
    files: dict[str, str]
    contexts: list[dict[str, Any]] = field(default_factory=lambda: [{}])
    #: What the converter reports for this case (then the render is not compared).
    reported: bool = False
    #: Why the converted template renders differently, when it does by design.
    differs: str = ""
    #: Rendered with a request (Django's ``RequestContext``, the PTL engine's ``request``).
    request: bool = False

    @property
    def source(self) -> str:
        return self.files["main.html"]


def case(
    construct: str,
    source: str,
    contexts: list[dict[str, Any]] | None = None,
    reported: bool = False,
    differs: str = "",
    **files: str,
) -> Case:
    """A case rendering *source*; *files* are more templates (``sub__part_html`` is ``sub/part.html``)."""
    all_files = {"main.html": source}
    all_files.update(
        {name.replace("__", "/").replace("_html", ".html"): text for name, text in files.items()}
    )
    return Case(construct, all_files, contexts or [{}], reported, differs)


def values(name: str, items: list[Any]) -> list[dict[str, Any]]:
    return [{name: item} for item in items]


CASES: list[Case] = [
    # -- output ---------------------------------------------------------------------------
    case(
        "{{ variable }}",
        "<p>{{ value }}</p>",
        values("value", [*VALUES, DAY, WHEN, mark_safe("<i>safe</i>")]),
    ),
    case(
        "{{ variable }}",
        "{{ missing }}|{{ missing.attr }}|{{ thing.nothing.more }}",
        [{"thing": Thing("t")}],
    ),
    case(
        "{{ a.b.c }} lookups",
        "{{ d.key }} {{ d.items }} {{ l.0 }} {{ l.5 }} {{ thing.name }} {{ thing.upper_name }} "
        "{{ thing.delete }} {{ thing }} {{ d.nested.deeper }}",
        [
            {
                "d": {"key": "<k>", "items": "shadow", "nested": {"deeper": 3}},
                "l": ["zero", 1],
                "thing": Thing("<n>"),
            },
            {"d": {}, "l": [], "thing": Thing(None)},
        ],
    ),
    case("{{ variable }}", '{{ "literal <b>" }} {{ 42 }} {{ 1.5 }} {{ True }} {{ None }}'),
    case("text", "plain text with <b>markup</b> & entities &amp; {kept}\n  indented\n"),
    case("{# comment #}", "a{# a comment #}b{# another\n #}c"),
    case(
        "{% comment %}",
        "a{% comment %}hidden {{ x }} {% if %}{% endcomment %}b{% comment 'note' %}x{% endcomment %}",
    ),
    # -- if ---------------------------------------------------------------------------------
    case(
        "{% if %}",
        "{% if a %}A{% elif b %}B{% else %}C{% endif %}|{% if not a %}not{% endif %}"
        "|{% if a and b %}and{% endif %}|{% if a or b %}or{% endif %}"
        "|{% if not a and b or not b %}mixed{% endif %}",
        [*({"a": a, "b": b} for a in (0, 1, "", "x", None, []) for b in (0, "y")), {}],
    ),
    case(
        "{% if %} comparisons",
        "{% if a == b %}eq{% endif %}{% if a != b %}ne{% endif %}{% if a < b %}lt{% endif %}"
        "{% if a > b %}gt{% endif %}{% if a <= b %}le{% endif %}{% if a >= b %}ge{% endif %}"
        "{% if a in b %}in{% endif %}{% if a not in b %}notin{% endif %}"
        "{% if a is b %}is{% endif %}{% if a is not b %}isnot{% endif %}"
        "{% if a is None %}none{% endif %}{% if missing == None %}missing-none{% endif %}"
        '{% if a == "x" %}x{% endif %}{% if a|length > 1 %}long{% endif %}',
        [
            {"a": a, "b": b}
            for a, b in [
                (1, 2),
                (2, 1),
                (1, 1),
                ("x", "xyz"),
                ("x", ["x"]),
                (None, None),
                ("", 1),
                (1, None),
                ("x", "x"),
            ]
        ]
        + [{}],
    ),
    case(
        "{% if %}",
        "{% if x|default_if_none:y %}yes{% else %}no{% endif %}",
        [{}, {"y": 0}, {"y": 1}, {"x": None, "y": "1"}],
    ),
    # -- for ---------------------------------------------------------------------------------
    case(
        "{% for %}",
        "{% for x in items %}[{{ x }}]{% endfor %}{% for x in items reversed %}({{ x }}){% endfor %}",
        [*values("items", [*SEQUENCES, None, {"k": 1}, range(3)]), {}],
    ),
    case(
        "{% for %} {% empty %}",
        "<ul>{% for x in items %}<li>{{ x }}</li>{% empty %}<li>none</li>{% endfor %}</ul>",
        [*values("items", SEQUENCES), {}, {"items": None}],
    ),
    case(
        "forloop",
        "{% for x in items %}{{ forloop.counter }}{{ forloop.counter0 }}{{ forloop.revcounter }}"
        "{{ forloop.revcounter0 }}{% if forloop.first %}F{% endif %}{% if forloop.last %}L{% endif %}"
        "{% for y in x %}({{ forloop.parentloop.counter }}.{{ forloop.counter }}={{ y }}){% endfor %};{% endfor %}",
        values("items", [["ab", "c"], [], ["xyz"], ("pq", "r", "")]),
    ),
    case(
        "{% for %} unpacking",
        "{% for k, v in pairs %}{{ k }}={{ v }};{% endfor %}{% for k, v in d.items %}{{ k }}:{{ v }},{% endfor %}",
        [{"pairs": [("a", 1), ("<", ">")], "d": {"x": "<y>", "z": 2}}],
    ),
    case(
        "{% for %} scope",
        "{% for x in items %}{{ x }}{% endfor %}{{ x }}",
        [{"items": [1, 2], "x": "outer"}, {"items": [1]}],
    ),
    # -- with ---------------------------------------------------------------------------------
    case(
        "{% with %}",
        "{% with total=items|length name=thing.name %}{{ total }} {{ name }}{% endwith %}[{{ total }}]"
        "{% with items.0 as first %}{{ first }}{% endwith %}",
        [{"items": ["<a>", "b"], "thing": Thing("<n>"), "total": "outer"}, {"items": []}],
    ),
    # -- autoescape, safe ---------------------------------------------------------------------
    case(
        "{% autoescape %}",
        "{{ v }}{% autoescape off %}[{{ v }}|{{ v|upper }}|{{ v|join:', ' }}]{% autoescape on %}({{ v }}){% endautoescape %}{% endautoescape %}",
        values("v", [HOSTILE, ["<a>", "&"], mark_safe("<i>s</i>")]),
    ),
    case(
        "{% autoescape %}",
        "{% autoescape off %}{% include 'part.html' %}{% block b %}{% endblock %}{% endautoescape %}"
        "{% include 'part.html' %}",
        values("v", [HOSTILE]),
        part_html="[{{ v }}|{{ v|linebreaksbr }}]",
    ),
    case(
        "{% autoescape %}",
        "{% extends 'base.html' %}{% block b %}{{ v }}{% endblock %}",
        values("v", [HOSTILE]),
        base_html="{% autoescape off %}{% block b %}{% endblock %}{% endautoescape %}|{% block c %}{{ v }}{% endblock %}",
    ),
    case(
        "|safe",
        "{{ v|safe }} {{ v|safe|upper }} {{ v|escape }} {{ v|force_escape }} {{ v|safeseq|join:'' }}",
        values("v", [HOSTILE, ["<a>", "&"], "plain"]),
    ),
    # -- extends and block ----------------------------------------------------------------------
    case(
        "{% extends %} {% block %}",
        '{% extends "base.html" %}{% block title %}Child {{ title }}{% endblock %}'
        "{% block body %}<p>{{ block.super }} and more</p>{% endblock %}outside is ignored",
        [{"title": HOSTILE}, {}],
        base_html="<title>{% block title %}Base{% endblock %}</title>"
        "<body>{% block body %}base body {{ title }}{% endblock %}</body>",
    ),
    case(
        "{% extends %} {% block %} nested",
        '{% extends "middle.html" %}{% block inner %}[child inner {{ block.super }}]{% endblock %}',
        [{"x": "<x>"}],
        base_html="<h1>{% block header %}header {% block inner %}base inner{% endblock %}{% endblock %}</h1>{% block footer %}f{{ x }}{% endblock %}",
        middle_html='{% extends "base.html" %}{% block header %}middle({{ block.super }}){% endblock %}',
    ),
    case(
        "{% extends %} {% block %}",
        "{% extends 'base.html' %}{% block b %}{% spaceless %}<b> {{ block.super }} </b>"
        "{% endspaceless %}{% filter upper %}{{ block.super }}{% endfilter %}{% endblock %}",
        values("v", ["<v>"]),
        base_html="[{% block b %}<i> base {{ v }} </i>{% endblock %}]",
    ),
    case(
        "{% extends %} {% block %} in loops",
        '{% extends "loop.html" %}{% block item %}({{ x }}:{{ forloop.counter }}){% endblock %}',
        [{"items": ["a", "<b>"]}],
        loop_html="{% for x in items %}{% block item %}{{ x }}{% endblock %}{% endfor %}",
    ),
    case(
        "{% extends %} {% block %}",
        "{% extends 'middle.html' %}{% block b %}child{% endblock %}",
        [{"v": "<v>"}],
        middle_html="{% extends 'plain.html' %}{% block b %}middle{% endblock %}",
        plain_html="no blocks {{ v }}",
    ),
    # -- include -----------------------------------------------------------------------------------
    case(
        "{% include %}",
        '{% include "part.html" %}|{% include "part.html" with name="lit" %}|'
        '{% include "part.html" with name=other only %}|{% for name in names %}{% include "part.html" %}{% endfor %}',
        [{"name": "<n>", "other": "o", "names": ["x", "<y>"], "extra": "e"}, {}],
        part_html="[{{ name }} {{ extra }} {{ forloop.counter }}]",
    ),
    case(
        "{% include %}", '{% include "sub/part.html" %}', [{"v": 1}], sub__part_html="sub {{ v }}"
    ),
    case(
        "{% include %}",
        '{% for c in comments %}{{ c.name }}({% include "main.html" with comments=c.children %}){% endfor %}',
        [{"comments": [{"name": "a", "children": [{"name": "<b>", "children": []}]}]}],
    ),
    case(
        "{% include %}",
        "{% include template_name %}|{% include names %}",
        [{"template_name": "part.html", "names": ["nope.html", "part.html"], "v": "<v>"}],
        part_html="[{{ v }}]",
    ),
    case(
        "{% extends %} {% block %}",
        "{% extends parent %}{% block b %}child{% endblock %}",
        [{"parent": "base.html"}],
        reported=True,
        base_html="[{% block b %}{% endblock %}]",
    ),
    # -- url, static, csrf ------------------------------------------------------------------------
    case(
        "{% url %}",
        "<a href=\"{% url 'index' %}\">i</a> {% url 'item' name %} {% url 'item' name=name %}"
        " {% url 'nope' as missing %}[{{ missing }}]{% url 'index' as here %}{{ here }}",
        [{"name": "a b"}, {"name": "<x>"}],
    ),
    case(
        "{% static %}",
        "{% load static %}<img src=\"{% static 'img/a b.png' %}\">{% static path %}{% static 'x.css' as css %}{{ css }}"
        "{% get_static_prefix %}{% get_media_prefix %}",
        [{"path": "js/<x>.js"}],
    ),
    case(
        "{% csrf_token %}",
        "<form>{% csrf_token %}</form>",
        # Django 6's own {% csrf_token %} raises on NOTPROVIDED (format_html("") wants args).
        [{"csrf_token": "abc<def>"}, {}]
        + ([{"csrf_token": "NOTPROVIDED"}] if django.VERSION < (6, 0) else []),
    ),
    # -- small tags ------------------------------------------------------------------------------
    case(
        "{% cycle %}",
        "{% for x in items %}<tr class=\"{% cycle 'odd' 'even' %}\">{% cycle a b as c silent %}{{ c }}</tr>{% endfor %}"
        "{% cycle 'x' 'y' as named %}{% cycle named %}{% resetcycle %}",
        [{"items": [1, 2, 3], "a": "<A>", "b": "B"}],
    ),
    case(
        "{% firstof %}",
        "{% firstof a b 'fallback <b>' %}|{% firstof a b %}|{% firstof a b as chosen %}[{{ chosen }}]",
        [{"a": 0, "b": "<b>"}, {"a": "<a>"}, {}],
    ),
    case(
        "`as name`",
        "{{ foo }}{% if a %}{% url 'index' as foo %}{% endif %}[{{ foo }}]"
        "{% for i in l %}({{ foo }}){% if i %}{% firstof i as foo %}{% endif %}[{{ foo }}]{% endfor %}({{ foo }})"
        "{% for x in l %}{% cycle 'p' 'q' as pq silent %}{% include 'pq.html' %}{% endfor %}",
        [{"a": 0, "foo": "ctx", "l": [0, "<1>", 0]}, {"a": 1, "l": []}],
        pq_html="{{ pq }}",
    ),
    case("{% now %}", '{% now "Y" %}|{% now "Y" as year %}{{ year }}'),
    case(
        "{% spaceless %}",
        '{% spaceless %}\n <p>\n  <a href="x">  {{ v }} </a>\n </p>\n{% endspaceless %}',
        values("v", ["a", HOSTILE]),
    ),
    case(
        "{% verbatim %}",
        "{% verbatim %}{{ not }} {% a tag %}{% endverbatim %}{% verbatim x %}{{ y }}{% endverbatim x %}",
    ),
    case(
        "{% templatetag %}",
        "{% templatetag openblock %} {% templatetag closevariable %} {% templatetag openbrace %}",
    ),
    case("{% load %}", "{% load i18n static %}{% load static from static %}ok"),
    case(
        "{% filter %}",
        "{% filter force_escape|upper %}<b>{{ v }}</b>{% endfilter %}|{% filter lower %}A{{ v }}{% endfilter %}",
        values("v", ["X", HOSTILE]),
    ),
    case(
        "{% ifchanged %}",
        "{% for x in items %}{% ifchanged %}<h1>{{ x.0 }}{% endifchanged %}{% ifchanged x %}c{% else %}s{% endifchanged %}{% endfor %}",
        values("items", [["a1", "a2", "b1", "b1"], []]),
    ),
    case(
        "{% ifchanged %}",
        "{% for x in xs %}{% include 'row.html' %}{% endfor %}{% include 'row.html' %}",
        [{"xs": [{"g": 1, "n": "a"}, {"g": 1, "n": "b"}, {"g": "<2>", "n": "c"}], "x": {"g": 3}}],
        row_html="{% ifchanged x.g %}<h2>{{ x.g }}</h2>{% else %}-{% endifchanged %}{{ x.n }}",
    ),
    case(
        "{% regroup %}",
        "{% regroup people by city as groups %}{% for g in groups %}{{ g.grouper }}:{% for p in g.list %}{{ p.name }},{% endfor %};{% endfor %}",
        [
            {
                "people": [
                    {"name": "a", "city": "X"},
                    {"name": "b", "city": "X"},
                    {"name": "<c>", "city": "Y"},
                ]
            },
            {},
        ],
    ),
    case(
        "{% widthratio %}",
        "{% widthratio a b 100 %}|{% widthratio a b 10 as w %}{{ w }}",
        [{"a": 17, "b": 200}, {"a": 1, "b": 0}, {"a": "x", "b": 3}, {}],
    ),
    case("{% lorem %}", "{% lorem %}|{% lorem 3 w %}|{% lorem 1 p %}"),
    case("{% debug %}", "{% debug %}", reported=True),
    case(
        "values in URLs, scripts and styles",
        "<h{{ level }}>title</h{{ level }}>",
        [{"level": 1}, {"level": "2"}, {"level": "1 onclick=alert(1)"}],
        differs="a value glued to a tag's name: PTL writes its marker for text, Django the text",
    ),
    # -- i18n --------------------------------------------------------------------------------------
    case(
        "{% translate %}",
        '{% load i18n %}{% translate "Hello <b>" %}|{% trans "Hi" context "greeting" %}|'
        '{% translate v %}|{% translate "x" as y %}{{ y }}|{% translate "noop" noop %}|{{ _("Yes") }}',
        values("v", ["v<a>", 1]),
    ),
    case(
        "{% blocktranslate %}",
        "{% load i18n %}{% blocktranslate %}Hello <b>{{ name }}</b> 100%{% endblocktranslate %}|"
        "{% blocktranslate with n=thing.name %}{{ n }}!{% endblocktranslate %}|"
        "{% blocktranslate count counter=items|length %}one {{ counter }}{% plural %}{{ counter }} many{% endblocktranslate %}|"
        "{% blocktranslate trimmed %}\n  spaced\n  out\n{% endblocktranslate %}|"
        "{% blocktrans asvar saved %}saved {{ name }}{% endblocktrans %}{{ saved }}",
        [
            {"name": "<N>", "thing": Thing("<t>"), "items": [1]},
            {"name": "x", "thing": Thing(2), "items": [1, 2]},
        ],
    ),
    case(
        "{% get_current_language %}", "{% load i18n %}{% get_current_language as lang %}{{ lang }}"
    ),
    # -- branches inside a tag ---------------------------------------------------------------
    case(
        "`{% if %}` inside a tag",
        '<select>{% for o in options %}<option value="{{ o }}"{% if o == chosen %} selected{% endif %}>'
        "{{ o }}</option>{% endfor %}</select>"
        '<form {% if files %}enctype="multipart/form-data" {% endif %}{% if url %}action="{{ url }}" '
        '{% endif %}method="post" id="{{ id }}">{% csrf_token %}</form>',
        [
            {
                "options": ["a", '"b" <c>'],
                "chosen": '"b" <c>',
                "files": 1,
                "url": '/x?a=1&b="2"',
                "id": "f",
            },
            {"options": [], "files": 0, "url": "", "id": '<"id">'},
        ],
    ),
    case(
        "`{% if %}` inside a tag",
        '<a href="/x?{% if q %}q={{ q }}&amp;{% endif %}p=1">x</a>',
        [{"q": "a b"}],
        reported=True,
    ),
    # -- where PTL escapes more than Django: by the place a value lands ------------------------
    case(
        "values in URLs, scripts and styles",
        '<a href="{{ v }}">a</a><script>var s = "{{ v }}";</script><p onclick="go(\'{{ v }}\')">p</p>'
        '<p style="color: {{ v }}">s</p>',
        values("v", ["javascript:alert(1)", '";alert(1)//', "red;background:url(x)", "a b"]),
        differs="PTL escapes a value for the place it lands (URL, JavaScript, CSS), Django for HTML only",
    ),
    case(
        "values in URLs, scripts and styles",
        '<a href="/item/{{ v }}?q={{ v }}">a</a><p title="{{ v }}">t</p>',
        values("v", ["plain", "x-y_z.html", 1]),
    ),
    # -- not converted -----------------------------------------------------------------------------
    case("custom tag", "{% load humanize_nope %}{% custom_tag a %}", reported=True),
    case("unknown filter", "{{ v|no_such_filter }}", [{"v": 1}], reported=True),
]

#: Every builtin filter, each with arguments and the values it is tried on.
FILTER_CASES: list[tuple[str, str, list[Any]]] = [
    ("add", "{{ v|add:2 }} {{ v|add:'x' }} {{ v|add:other }}", [*VALUES, [1], (2,)]),
    ("addslashes", "{{ v|addslashes }}", [*TEXTS, 'it\'s "q" \\']),
    ("capfirst", "{{ v|capfirst }}", VALUES),
    ("center", "[{{ v|center:'9' }}]", TEXTS),
    ("cut", "{{ v|cut:' ' }}", TEXTS),
    (
        "date",
        "{{ v|date }} {{ v|date:'Y-m-d H:i' }} {{ v|date:'D, j M \\a\\t P' }} {{ v|date:'SHORT_DATE_FORMAT' }}",
        [WHEN, DAY, "", None, "x"],
    ),
    ("default", "{{ v|default:'nothing' }} {{ missing|default:'<gone>' }}", VALUES),
    ("default_if_none", "{{ v|default_if_none:'none' }} {{ missing|default_if_none:'m' }}", VALUES),
    (
        "dictsort",
        "{% for d in v|dictsort:'k' %}{{ d.k }}{% endfor %}|{{ v|dictsort:'0' }}",
        [[{"k": 2}, {"k": 1}, {"k": "<3>"}][:2], [], "x"],
    ),
    (
        "dictsortreversed",
        "{% for d in v|dictsortreversed:'k' %}{{ d.k }}{% endfor %}",
        [[{"k": 2}, {"k": 1}, {"k": 3}], []],
    ),
    ("divisibleby", "{{ v|divisibleby:3 }}", [0, 3, 4, 9]),
    ("escape", "{{ v|escape }}", VALUES),
    ("escapejs", "{{ v|escapejs }}", TEXTS),
    ("filesizeformat", "{{ v|filesizeformat }}", [0, 1, 1023, 1024, 123456789, 10**15, "x", None]),
    ("first", "{{ v|first }}", SEQUENCES),
    (
        "floatformat",
        "{{ v|floatformat }} {{ v|floatformat:2 }} {{ v|floatformat:'-3' }} {{ v|floatformat:'0' }} {{ v|floatformat:'2g' }}",
        [0, 1, 1.5, 2.675, -3.14159, Decimal("1234.5678"), "x", "12.5", None],
    ),
    ("force_escape", "{{ v|force_escape }}", TEXTS),
    ("get_digit", "{{ v|get_digit:2 }} {{ v|get_digit:9 }}", [123, 5, "x", -45]),
    ("iriencode", "{{ v|iriencode }}", [*TEXTS, "/a b?c=d&e=é"]),
    ("join", "{{ v|join:', ' }} {{ v|join:sep }}", SEQUENCES),
    (
        "json_script",
        "{{ v|json_script:'data' }} {{ v|json_script }}",
        [{"a": "</script>"}, [1, "<"], "x"],
    ),
    ("last", "{{ v|last }}", SEQUENCES),
    ("length", "{{ v|length }}", [*SEQUENCES, None, 3]),
    ("linebreaks", "{{ v|linebreaks }}", ["a\nb\n\nc", HOSTILE, "", "x\r\ny"]),
    ("linebreaksbr", "{{ v|linebreaksbr }}", ["a\nb", HOSTILE]),
    ("linenumbers", "{{ v|linenumbers }}", ["a\nb\n<c>", ""]),
    ("ljust", "[{{ v|ljust:'8' }}]", TEXTS),
    ("lower", "{{ v|lower }}", VALUES),
    ("make_list", "{{ v|make_list }}", ["ab<", 123]),
    ("phone2numeric", "{{ v|phone2numeric }}", ["1-800-FLOWERS", "<x>"]),
    (
        "pluralize",
        "vote{{ v|pluralize }} cherr{{ v|pluralize:'y,ies' }} walrus{{ v|pluralize:'es' }}",
        [0, 1, 2, [1], [1, 2], "x", Decimal(1)],
    ),
    ("pprint", "{{ v|pprint }}", [{"a": "<b>"}, [1, 2], "x"]),
    ("random", "{{ v|random }}", [["<only>"], "z"]),
    ("rjust", "[{{ v|rjust:'8' }}]", TEXTS),
    ("safe", "{{ v|safe }}", TEXTS),
    ("safeseq", "{{ v|safeseq|join:'' }}", SEQUENCES),
    ("slice", "{{ v|slice:':2' }} {{ v|slice:'1:' }} {{ v|slice:'::-1' }}", [*SEQUENCES, "hello"]),
    ("slugify", "{{ v|slugify }}", [*TEXTS, "Hello, World!"]),
    (
        "stringformat",
        "{{ v|stringformat:'s' }} {{ v|stringformat:'05d' }} {{ v|stringformat:'.2f' }} {{ v|stringformat:'r' }}",
        [1, 2.5, "<x>", None],
    ),
    ("striptags", "{{ v|striptags }}", [*TEXTS, "<p>a <b>b</b></p>"]),
    ("time", "{{ v|time }} {{ v|time:'H:i:s' }}", [WHEN, WHEN.time(), "", None]),
    ("timesince", "{{ v|timesince:later }}", [WHEN, DAY]),
    ("timeuntil", "{{ later|timeuntil:v }}", [WHEN, DAY]),
    ("title", "{{ v|title }}", [*TEXTS, "they're bill's friends"]),
    ("truncatechars", "{{ v|truncatechars:5 }}", TEXTS),
    ("truncatechars_html", "{{ v|truncatechars_html:5 }}", [*TEXTS, "<p>hello <b>world</b></p>"]),
    ("truncatewords", "{{ v|truncatewords:2 }}", TEXTS),
    ("truncatewords_html", "{{ v|truncatewords_html:2 }}", [*TEXTS, "<p>one two <b>three</b></p>"]),
    ("unordered_list", "{{ v|unordered_list }}", [["a", ["<b>", "c"]], ["x"]]),
    ("upper", "{{ v|upper }}", VALUES),
    ("urlencode", "{{ v|urlencode }} {{ v|urlencode:'' }}", [*TEXTS, "/a b?c=d&e"]),
    (
        "urlize",
        "{{ v|urlize }}",
        ["see https://example.com/<x> and www.x.org", "mail a@b.com", HOSTILE],
    ),
    ("urlizetrunc", "{{ v|urlizetrunc:10 }}", ["see https://example.com/long/path"]),
    ("wordcount", "{{ v|wordcount }}", TEXTS),
    ("wordwrap", "{{ v|wordwrap:5 }}", ["a long line of words", HOSTILE]),
    (
        "yesno",
        "{{ v|yesno }} {{ v|yesno:'ja,nein' }} {{ v|yesno:'y,n,maybe' }}",
        [True, False, None, 0, "x"],
    ),
]

if django.VERSION >= (5, 0):  # (escapeseq is new in Django 5.0)
    FILTER_CASES.append(("escapeseq", "{{ v|escapeseq|join:',' }}", SEQUENCES))

for _name, _source, _values in FILTER_CASES:
    CASES.append(
        case(
            f"|{_name}",
            _source,
            [
                {
                    "v": v,
                    "other": "<o>",
                    "sep": "<s>",
                    "later": WHEN + datetime.timedelta(days=3, hours=2),
                }
                for v in _values
            ],
        )
    )

#: Templates written to break the converter's Python: every one must convert to a module
#: that compiles, runs no code of the template's, and renders as Django does.
HOSTILE_CASES: list[Case] = [
    case(
        "hostile text",
        '""" \'\'\' \\ \\x41 \r \u2028 \x00 {{ v }} """)\nimport os; os.system("x")\n#',
        values("v", [HOSTILE]),
    ),
    case(
        "hostile comments",
        "{# x\rraise SystemExit #}a{# \u2028raise SystemExit #}b"
        '{% comment %}\n\rraise SystemExit\n"""{% endcomment %}c',
    ),
    case(
        "hostile names",
        "{% block a-b.c %}[{{ self }}{{ context }}{{ dj }}{{ undefined }}{{ looped }}{{ class }}]{% endblock %}"
        "{% block __class__ %}{% block page %}{% block context %}x{% endblock %}{% endblock %}{% endblock %}"
        "{% with def=v lambda=v %}{{ def }}{{ lambda }}{% endwith %}{% for None_ in v %}{% endfor %}",
        [{"self": 1, "context": 2, "dj": 3, "undefined": 4, "looped": 5, "class": 6, "v": "<v>"}],
    ),
    case(
        "literals keep Django's trust",
        '{% with x="<b>" %}{{ x }}{{ x.upper }}{{ x|upper }}{{ x.title }}{% endwith %}'
        '{{ "<i>"|add:v }}{% firstof "<u>" %}',
        values("v", ["<v>"]),
    ),
    case(
        "hostile arguments",
        "{{ v|default:'\\\")\\nraise SystemExit#' }}{{ v|join:\"'''\" }}"
        "{% url 'item' name='\"); raise SystemExit(\"' %}{% now '\"\"\"' %}",
        [{"v": ""}, {"v": ["a", "b"]}],
    ),
]

if django.VERSION >= (5, 1):
    CASES.append(
        case(
            "{% querystring %}",
            '<a href="{% querystring page=2 q=None %}">n</a>{% querystring page=v as next %}[{{ next }}]',
            [{"v": "<3>"}],
        )
    )
    CASES[-1].request = True
