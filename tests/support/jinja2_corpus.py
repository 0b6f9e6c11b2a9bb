"""A corpus of Jinja2 templates, one or more per construct, for the converter's differential test.

Written for ptl_wsgi (not taken from Jinja2's suite). Each case says what its conversion
must do: render what Jinja2 renders (``identical``), report what it cannot convert and
fail loudly where a render reaches it (``reported``), or differ in the one documented way
(``documented``: more escaping than Jinja2, never less).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from markupsafe import Markup


@dataclass(frozen=True)
class Case:
    construct: str
    templates: dict[str, str]
    expect: str = "identical"
    #: For documented differences: the text that must show in ours and not in theirs.
    ours: str = ""
    filters: tuple[str, ...] = ()
    extra: dict[str, object] = field(default_factory=dict)
    #: --engine-option NAME=VALUE: the Jinja2 environment's syntax settings.
    options: dict[str, str] = field(default_factory=dict)

    @property
    def main(self) -> str:
        return next(iter(self.templates))


class Obj:
    """An object with attributes, an item and a method, as templates meet them."""

    name = "obj <name>"
    title = "Obj"

    def __getitem__(self, key: str) -> str:
        if key == "only_item":
            return "item!"
        raise KeyError(key)

    def greet(self, who: str) -> str:
        return f"hi {who}"

    def __str__(self) -> str:
        return "Obj<>"


def contexts() -> list[dict[str, object]]:
    """The contexts every case renders with."""
    base = {
        "obj": Obj(),
        "none": None,
        "empty": [],
        "html": Markup("<i>trusted</i>"),
        "d": {"b": 2, "a": 1, "C": 3},
        "num": 3.14159,
        "neg": -2,
        "url": "/a b?c=d&e=<f>",
        "words": "hello-world foo(bar) [baz] {qux} <tag>",
        "para": "Line one\nline two\n\nline four",
    }
    return [
        {
            **base,
            "name": "<Ann & 'Bob'>",
            "n": 3,
            "items": ["a", "<b>", "c", "a"],
            "users": [
                {"name": "Zed", "age": 30, "group": "b", "admin": True},
                {"name": "amy", "age": 25, "group": "a", "admin": False},
                {"name": "Bob", "age": 30, "group": "B", "admin": False},
            ],
            "text": "Hello world, this is a fairly long sentence for wrapping and truncating.",
        },
        {
            **base,
            "name": "plain",
            "n": 1,
            "items": [],
            "users": [],
            "text": "short",
        },
        {
            **base,
            "name": 'x"y',
            "n": 0,
            "items": ["only"],
            "users": [{"name": "<x>", "age": 1, "group": "g", "admin": True}],
            "text": "a-b-c d_e f.g " * 20,
        },
    ]


def _filter_cases() -> list[Case]:
    """One case per builtin filter (several usages in each)."""
    uses = {
        "abs": "{{ neg|abs }} {{ n|abs }}",
        "attr": "{{ obj|attr('name') }}|{{ obj|attr('only_item') }}|{{ d|attr('missing') }}",
        "batch": "{% for row in items|batch(2, '-') %}[{{ row|join(',') }}]{% endfor %}",
        "capitalize": "{{ name|capitalize }} {{ words|capitalize }}",
        "center": "[{{ name|center(20) }}]",
        "count": "{{ items|count }}",
        "default": "{{ missing|default('<none>') }} {{ none|d('x', true) }} {{ name|default('y') }}"
        " {{ empty|default('e', boolean=true) }}",
        "dictsort": "{{ d|dictsort }} {{ d|dictsort(true) }} {{ d|dictsort(by='value', reverse=true) }}",
        "escape": "{{ name|e }} {{ html|escape }} {{ name|e|e }}",
        "filesizeformat": "{{ 1|filesizeformat }} {{ 1000|filesizeformat }} {{ 123456789|filesizeformat }}"
        " {{ 1048576|filesizeformat(true) }} {{ n|filesizeformat }}",
        "first": "{{ items|first }}|{{ empty|first }}|{{ name|first }}",
        "float": "{{ '3.5'|float }} {{ 'x'|float }} {{ n|float }} {{ 'y'|float(1.5) }}",
        "forceescape": "{{ html|forceescape }} {{ name|forceescape }}",
        "format": "{{ '%s-%d'|format(name, n) }} {{ '%(a)s!'|format(a=name) }}",
        "groupby": "{% for g in users|groupby('group') %}{{ g.grouper }}:{{ g.list|map(attribute='name')"
        "|join(',') }};{% endfor %}{% for k, v in users|groupby('age') %}{{ k }}={{ v|length }};"
        "{% endfor %}",
        "indent": "{{ para|indent }}|{{ para|indent(2, true) }}|{{ para|indent('> ', blank=true) }}",
        "int": "{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(-1) }} {{ '0x1A'|int(0, 16) }}"
        " {{ num|int }}",
        "items": "{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %}{% for k in missing|items %}"
        "x{% endfor %}",
        "join": "{{ items|join(', ') }}|{{ users|join(';', attribute='name') }}|{{ [html, name]|join('<br>') }}",
        "last": "{{ items|last }}|{{ empty|last }}",
        "length": "{{ items|length }} {{ name|length }} {{ d|length }}",
        "list": "{{ name|list }} {{ d|list }}",
        "lower": "{{ name|lower }} {{ html|lower }}",
        "map": "{{ users|map(attribute='name')|join(',') }} {{ items|map('upper')|join(',') }}"
        " {{ users|map(attribute='missing', default='?')|join(',') }}",
        "max": "{{ [3, 1, 2]|max }} {{ ['b', 'A', 'c']|max }} {{ users|max(attribute='age') }}"
        " {{ empty|max }}",
        "min": "{{ [3, 1, 2]|min }} {{ ['b', 'A', 'c']|min(true) }} {{ empty|min }}",
        "pprint": "{{ d|pprint }} {{ items|pprint }}",
        "random": "{{ [7]|random }}",
        "reject": "{{ [1, 2, 3, 4]|reject('odd')|join(',') }} {{ [0, 1, '', 'a']|reject|list }}",
        "rejectattr": "{{ users|rejectattr('admin')|map(attribute='name')|join(',') }}",
        "replace": "{{ name|replace('a', '<A>') }} {{ html|replace('i', 'I') }} {{ text|replace('a', 'o', 2) }}"
        " {{ 'x<y'|replace('<', html) }} {{ 'x'|replace('x', html) }} {{ html|replace('<', '[') }}",
        "reverse": "{{ name|reverse }} {{ items|reverse|join(',') }}",
        "round": "{{ num|round }} {{ num|round(2) }} {{ num|round(1, 'floor') }} {{ num|round(1, 'ceil') }}"
        " {{ 2.5|round }}",
        "safe": "{{ '<b>'|safe }} {{ name|safe }} {{ html|safe }}",
        "select": "{{ [1, 2, 3, 4]|select('even')|join(',') }} {{ [0, 1, '', 'a']|select|list }}"
        " {{ users|map(attribute='age')|select('>', 26)|list }}",
        "selectattr": "{{ users|selectattr('admin')|map(attribute='name')|join(',') }}"
        " {{ users|selectattr('age', 'equalto', 30)|list|length }}",
        "slice": "{% for col in items|slice(3) %}[{{ col|join(',') }}]{% endfor %}"
        "{% for col in items|slice(3, '-') %}({{ col|join(',') }}){% endfor %}",
        "sort": "{{ items|sort|join(',') }} {{ ['b', 'A', 'c']|sort(true)|join }}"
        " {{ users|sort(attribute='age,name')|map(attribute='name')|join(',') }}"
        " {{ ['b', 'A', 'c']|sort(case_sensitive=true)|join }}",
        "string": "{{ n|string ~ 'x' }} {{ html|string }}",
        "striptags": "{{ '<p>a  <b>b</b><!-- c --> &amp; d</p>'|striptags }} {{ html|striptags }}",
        "sum": "{{ [1, 2, 3]|sum }} {{ users|sum(attribute='age') }} {{ [1, 2]|sum(start=10) }}",
        "title": "{{ name|title }} {{ words|title }}",
        "tojson": "<script>var x = {{ d|tojson }}; var y = {{ name|tojson }};</script>",
        "trim": "[{{ '  a b  '|trim }}] [{{ '--a--'|trim('-') }}]",
        "truncate": "{{ text|truncate(20) }}|{{ text|truncate(20, true) }}|{{ text|truncate(25, false, '…', 0) }}",
        "unique": "{{ items|unique|join(',') }} {{ ['a', 'A', 'b']|unique(true)|join }}",
        "upper": "{{ name|upper }} {{ html|upper }}",
        "urlencode": "{{ url|urlencode }} {{ d|urlencode }} {{ [('a b', 'c&d')]|urlencode }}"
        ' <a href="?{{ d|urlencode }}">q</a><a href="/s?q={{ url|urlencode }}&amp;{{ d|urlencode }}">s</a>',
        "wordcount": "{{ text|wordcount }} {{ name|wordcount }}",
        "wordwrap": "{{ text|wordwrap(20) }}|{{ text|wordwrap(15, false, '<br>') }}",
        "xmlattr": "<p{{ {'class': name, 'id': 'x', 'hidden': none} |xmlattr }}></p>",
    }
    return [Case(f"filter {name}", {"page.html": source}) for name, source in uses.items()]


def _test_cases() -> list[Case]:
    """Every builtin test."""
    tests = [
        "n is defined", "missing is undefined", "none is none", "n is odd", "n is even",
        "n is divisibleby 3", "n is number", "num is float", "n is integer", "name is string",
        "d is mapping", "items is iterable", "items is sequence", "obj.greet is callable",
        "html is escaped", "name is escaped", "n is sameas 3", "'A' is upper", "'a' is lower",
        "true is boolean", "false is false", "true is true", "n is eq 3", "n is ne 3",
        "n is lt 4", "n is le 3", "n is gt 1", "n is ge 5", "n is equalto 3",
        "n is greaterthan 1", "n is lessthan 9", "'a' is in 'abc'", "'upper' is filter",
        "'odd' is test", "n is not odd", "not n is even",
    ]  # fmt: skip
    body = "".join("{{ " + test + " }}," for test in tests)
    return [Case("tests", {"page.html": body})]


CASES: list[Case] = [
    # -- output and escaping ----------------------------------------------------------
    Case("output", {"page.html": "<p>{{ name }}</p><p>{{ n }} {{ none }} {{ num }} {{ html }}</p>"}),
    Case("output", {"page.html": "{{ '<b>' }} {{ 42 }} {{ [1, 'a'] }} {{ {'k': 'v'} }} {{ none }} {{ true }}"}),
    Case("output", {"mail.txt": "Hi {{ name }} {{ html }} & {{ '<b>' }}"}),
    Case("output", {"page.html": '<a title="{{ name }}" class=\'{{ name }}\'>{{ obj }}</a>'}),
    Case("undefined", {"page.html": "[{{ missing }}][{{ missing|length }}][{% for x in missing %}x{% endfor %}]"
                                    "[{{ none.x }}][{{ d.missing }}][{{ d['missing'] }}][{{ missing is defined }}]"}),
    Case("undefined", {"page.html": "{{ missing.attr }}"}, "documented", ours=""),
    Case("attributes and items", {"page.html": "{{ obj.name }} {{ obj['name'] }} {{ obj.only_item }} "
                                               "{{ obj['only_item'] }} {{ d.a }} {{ d['b'] }} {{ d.a.real }} "
                                               "{{ items[1:3] }} {{ name[::-1] }} {{ obj.greet('you') }}"}),
    Case("expressions", {"page.html": "{{ n + 1 }} {{ n - 1 }} {{ n * 2 }} {{ n / 2 }} {{ n // 2 }} {{ n % 2 }} "
                                      "{{ n ** 2 }} {{ -n }} {{ n > 2 and 'big' or 'small' }} {{ not n }} "
                                      "{{ 'yes' if n else 'no' }} [{{ 'only if' if none }}] {{ 1 < n < 5 }} "
                                      "{{ 'a' in items }} {{ 'z' not in items }} {{ (1, 2) }} {{ [n, name] }}"}),
    Case("concatenation ~", {"page.html": "{{ name ~ '!' ~ n }} {{ html ~ name }} {{ '<' ~ n }} "
                                          "{{ (name ~ '<')|length }}"}),
    Case("string constants", {"page.html": "{{ 'it''s' }} {{ \"a \\\"q\\\" <b>\" }} {{ '%s & %s' % (name, n) }} "
                                           "{{ name ~ \"<i>\" }}"}),
    # -- statements --------------------------------------------------------------------
    Case("if", {"page.html": "{% if n > 2 %}big{% elif n %}some{% else %}none{% endif %}"
                             "{% if name %}[{{ name }}]{% endif %}{% if missing %}no{% endif %}"}),
    Case("if", {"page.html": "{% if n %}{% set z = 'set' %}{% endif %}{{ z }}"}),
    Case("for", {"page.html": "<ul>{% for item in items %}<li>{{ item }}</li>{% else %}<li>none</li>"
                              "{% endfor %}</ul>"}),
    Case("for", {"page.html": "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}"
                              "{% for u in users if u.admin %}{{ loop.index }}:{{ u.name }};{% endfor %}"}),
    Case("for", {"page.html": "{% set item = 'outer' %}{% for item in items %}{{ item }}{% endfor %}{{ item }}"
                              "{% for i in range(3) %}{% set item = i %}{{ item }}{% endfor %}{{ item }}"}),
    Case("for", {"page.html": "{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}"
                              "{% if i == 1 %}{% continue %}{% endif %}{{ i }}{% endfor %}"}),
    Case("loop.*", {"page.html": "{% for item in items %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}"
                                 "/{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }}"
                                 "/{{ loop.cycle('odd', 'even') }}/{{ loop.previtem }}/{{ loop.nextitem }}"
                                 "/{{ loop.changed(item) }}/{{ loop.depth }};{% endfor %}"}),
    Case("loop.*", {"page.html": "{% for row in users %}{% set outer = loop %}{% for item in items %}"
                                 "{{ outer.index }}.{{ loop.index }} {% endfor %}{% endfor %}"}),
    Case("for recursive", {"page.html": "<ul>{% for node in tree recursive %}<li>{{ node.name }} "
                                        "{{ loop.depth }}/{{ loop.depth0 }}/{{ loop.index }}{% if node.children %}"
                                        "<ul>{{ loop(node.children) }}</ul>{% endif %}</li>"
                                        "{% else %}<li>-</li>{% endfor %}</ul>"},
         extra={"tree": [{"name": "a", "children": [{"name": "<b>", "children": []},
                                                    {"name": "c", "children": [{"name": "d"}]}]},
                         {"name": "e"}]}),
    Case("set", {"page.html": "{% set x = n * 2 %}{% set a, b = 1, name %}{{ x }} {{ a }} {{ b }}"
                              "{% set ns = namespace(count=0) %}{% for i in items %}"
                              "{% set ns.count = ns.count + 1 %}{% endfor %}{{ ns.count }}"}),
    Case("set", {"page.html": "{{ x }}{% set x = 5 %}{{ x }}", "x.html": ""}),
    Case("set", {"page.html": "{% set ns = namespace(d, self=1, n=n) %}{% set ns.more = ns.n + 1 %}"
                              "{{ ns.a }}/{{ ns.self }}/{{ ns.more }}"}),
    Case("set", {"page.html": "{% set str = '<s>' %}{% set slice = n %}{{ str ~ '&' }} {{ '<' ~ slice }} "
                              "{{ range(slice)|list }} {{ context }} {{ scope }}"},
         extra={"context": "ctx", "scope": "sc"}),
    Case("set block", {"page.html": "{% set block %}<b>{{ name }}</b>{% endset %}{{ block }}"
                                    "{% set up | upper %}[{{ name }}]{% endset %}{{ up }}"}),
    Case("with", {"page.html": "{% with a = n, b = name %}{{ a }} {{ b }}{% endwith %}[{{ a }}]"}),
    Case("do", {"page.html": "{% set acc = [] %}{% do acc.append(n) %}{% do acc.append(name) %}{{ acc }}"}),
    Case("filter block", {"page.html": "{% filter upper %}<b>{{ name }}</b>{% endfilter %}"}),
    Case("filter block", {"page.html": "[{% filter lower|trim|center(12) %}  <B>{{ name }}</B>  {% endfilter %}]"}),
    Case("raw", {"page.html": "{% raw %}{{ not a variable }} {% if %}{% endraw %}"}),
    Case("engine options", {"page.html": "<ul>\n  {% for item in items %}\n  <li>{{ item }}</li>\n  {% endfor %}\n</ul>\n"
                                         "# if n\nn={{ n }}\n# endif\n## a line comment\n"},
         options={"trim_blocks": "true", "lstrip_blocks": "true", "keep_trailing_newline": "true",
                  "line_statement_prefix": "#", "line_comment_prefix": "##"}),
    Case("engine options", {"page.html": "<% for i in items %>[[ i ]]<% endfor %>{# kept #}<# gone #>"},
         options={"block_start_string": "<%", "block_end_string": "%>", "variable_start_string": "[[",
                  "variable_end_string": "]]", "comment_start_string": "<#", "comment_end_string": "#>"}),
    Case("comment", {"page.html": "a{# a comment #}b{#\n  two\n  lines\n#}c"}),
    Case("whitespace control", {"page.html": "<ul>\n  {%- for item in items %}\n    <li>{{- item -}}</li>\n"
                                             "  {%- endfor %}\n</ul>\n"}),
    Case("autoescape", {"page.html": "{% autoescape false %}{{ name }}{% endautoescape %}|{{ name }}"
                                     "|{% autoescape true %}{{ name }}{% endautoescape %}"}),
    Case("autoescape", {"mail.txt": "{{ name }}|{% autoescape true %}{{ name }} {{ html }}{% endautoescape %}"}),
    # -- inheritance ----------------------------------------------------------------------
    Case("extends and block", {
        "page.html": "{% extends 'base.html' %}{% block title %}Page of {{ name }}{% endblock %}"
                     "{% block body %}<p>{{ super() }} and more</p>{% endblock %}",
        "base.html": "<title>{% block title %}Base{% endblock %}</title>"
                     "<main>{% block body %}base body{% endblock %}</main>{% block foot %}foot{% endblock %}",
    }),
    Case("extends and block", {
        "page.html": "{# a comment #}\nbefore {{ name }}\n{% extends 'base.html' %}ignored{% set v = 1 %}"
                     "{% block b %}B{{ v }}{% endblock %}after",
        "base.html": "<p>{% block b %}{% endblock %}</p>{{ v }}",
    }),
    Case("extends and block", {
        "page.html": "{% extends 'bare.html' if n == 1 else layout %}{% set v = 2 %}"
                     "{% block b %}B{{ v }} {{ super() }}{% endblock %}",
        "base.html": "<p>{% block b %}base{% endblock %}</p>{{ v }}",
        "bare.html": "{% block b %}bare{% endblock %}",
    }, extra={"layout": "base.html"}),
    Case("nested blocks", {
        "page.html": "{% extends 'base.html' %}{% block title %}Inner{% endblock %}",
        "base.html": "{% block header %}<h1>{% block title %}Base{% endblock %}</h1>{% endblock %}"
                     "<title>{{ self.title() }}</title>",
    }),
    Case("nested blocks", {
        "page.html": "{% extends 'mid.html' %}{% block a %}[page {{ super() }}]{% endblock %}",
        "mid.html": "{% extends 'base.html' %}{% set v = 'mid' %}{% block a %}(mid {{ super() }} {{ v }})"
                    "{% endblock %}{% block b %}B{% endblock %}",
        "base.html": "{% block a %}base{% endblock %}/{% block b %}b{% endblock %}/{{ v }}",
    }),
    Case("block required", {
        "page.html": "{% extends 'base.html' %}{% block body %}filled{% endblock %}",
        "base.html": "{% block body required %}{% endblock %}",
    }),
    Case("block scoped", {"page.html": "{% for item in items %}{% block row scoped %}{{ item }}"
                                       "{{ loop.index }}{% endblock %}{% endfor %}"}),
    Case("block scoped", {
        "page.html": "{% extends 'base.html' %}{% block row %}[{{ item }} {{ name }} {{ super() }}]{% endblock %}",
        "base.html": "{% for item in items %}{% block row scoped %}{{ item }}{% endblock %}{% endfor %}",
    }),
    # -- include, import, macros ------------------------------------------------------------
    Case("include", {
        "page.html": "{% for item in items %}{% include 'item.html' %}{% endfor %}"
                     "{% include 'item.html' without context %}{% include 'none.html' ignore missing %}"
                     "{% include ['none.html', 'item.html'] %}",
        "item.html": "<li>{{ item }} {{ name }}</li>",
    }),
    Case("include", {"page.html": "{% include 'mail.txt' %}", "mail.txt": "<b>{{ name }}</b>"}),
    Case("include", {"page.html": "{% include template_name %}{% include [missing, 'item.html'] %}"
                                  "{% include 'x' ~ missing ignore missing %}",
                     "item.html": "<i>{{ name }}</i>", "mail.txt": "<b>{{ name }}</b>"},
         extra={"template_name": "mail.txt"}),
    Case("macro", {"page.html": "{% macro card(title, body='<none>', n=2) %}<div>{{ title }}|{{ body }}|{{ n }}"
                                "|{{ name }}</div>{% endmacro %}{{ card('a') }}{{ card(name, 'b', n=5) }}"
                                "{{ card(title=name) }}"}),
    Case("macro", {"page.html": "{% macro m(a) %}{{ a }}:{{ varargs|join(',') }}:{{ kwargs|dictsort }}"
                                "{% endmacro %}{{ m(1, 2, 3, x=4) }}{% macro late() %}{{ x }}{% endmacro %}"
                                "{% set x = 'later' %}{{ late() }}"}),
    Case("import", {
        "page.html": "{% import 'forms.html' as forms %}{% from 'forms.html' import field as f, label %}"
                     "{{ forms.field('q', name) }}{{ f('r') }}{{ label('<l>') }}",
        "forms.html": "{% macro field(n, v='') %}<input name=\"{{ n }}\" value=\"{{ v }}\">{% endmacro %}"
                      "{% macro label(t) %}<label>{{ t }}</label>{% endmacro %}",
    }),
    Case("import", {
        "page.html": "{% import 'lib.html' as lib %}{% from 'lib.html' import version, shout %}"
                     "{{ lib.version }} {{ version }} {{ shout(name) }} {{ lib.shout('x') }}"
                     "{% import 'lib.html' as lib2 with context %}{{ lib2.version }}",
        "lib.html": "ignored output {% set version = '1.' ~ n %}{% macro shout(s) %}{{ s|upper }}!{% endmacro %}",
    }),
    Case("macro", {
        # An app's shape: macros wrapping same-named scoped blocks, imported with context
        # before {% extends %}, a block inside a tag, a macro defined in an {% if %}.
        "page.html": "{%- import 'lib.html' as lib with context -%}\n{% extends 'layout.html' %}"
                     "{% block content %}{% for u in users %}{{ lib.card(u) }}{% endfor %}{% endblock %}",
        "layout.html": "<main{%- block main_tag %} class=m{%- endblock %}>{% if n %}{% macro link(t) %}"
                       "{% set url_for = '/' ~ t %}<a href=\"{{ url_for }}\">{{ t }}</a>{% endmacro %}"
                       "{{ link('x') }}{% endif %}{% block content %}{% endblock %}</main>",
        "lib.html": "{% macro badge() %}{% block badge scoped %}<i>{{ name }}</i>{% endblock %}{% endmacro %}"
                    "{% macro card(u, big=False) %}{% block card scoped %}<div>{{ badge() }}{{ u.name }}"
                    "{% if big %}!{% endif %}</div>{% endblock %}{% endmacro %}",
    }),
    Case("call", {"page.html": "{% macro box(cls) %}<div class=\"{{ cls }}\">{{ caller() }}</div>{% endmacro %}"
                               "{% call box('x') %}<b>{{ name }}</b>{% endcall %}"
                               "{% macro each(xs) %}{% for x in xs %}{{ caller(x, loop.index) }}{% endfor %}"
                               "{% endmacro %}{% call(x, i) each(items) %}{{ i }}={{ x }};{% endcall %}"
                               "{% macro one() %}{{ caller('a') }}{% endmacro %}{% call(x, y=n) one() %}{{ x }}{{ y }}{% endcall %}"}),
    # -- globals and i18n -------------------------------------------------------------------
    Case("globals", {"page.html": "{{ range(3)|list }} {{ dict(a=1) }} {% set c = cycler('a', 'b') %}"
                                  "{{ c.next() }}{{ c.next() }}{{ c.next() }} {% set j = joiner('|') %}"
                                  "{% for i in items %}{{ j() }}{{ i }}{% endfor %}"}),
    Case("lipsum", {"page.html": "{{ lipsum(1) }}"}, "reported"),
    Case("trans", {"page.html": "{% trans %}Hello {{ name }}!{% endtrans %} "
                                "{% trans count=n %}one item{% pluralize %}{{ count }} items{% endtrans %} "
                                "{{ _('<b>Hi</b> %(who)s', who=name) }} {{ gettext('plain') }} "
                                "{{ ngettext('%(num)d apple', '%(num)d apples', n) }}"}),
    # -- what is reported -------------------------------------------------------------------
    Case("custom filter", {"page.html": "{{ name|shout }}"}, "reported"),
    Case("custom filter", {"page.html": "{{ name|shout }} {{ n is small }} {{ SITE_NAME }}"},
         filters=("jinja2_corpus_filters",)),
    Case("unknown tag", {"page.html": "a{% cache 60, 'k' %}b{{ name }}{% endcache %}{{ n }}"
                                      "{% assets 'x' %}"}, "reported"),
    Case("filter urlize", {"page.html": "{{ 'see http://example.com/?a=1&b=<2>, (www.x.org) or mail a@b.co.'|urlize }}"
                                        " {{ text|urlize(12, true, '_blank') }} {{ 'ftp://f.io x'|urlize(extra_schemes=['ftp:']) }}"}),
    Case("filter urlize", {"mail.txt": "{{ 'see http://example.com/?a=1&b=<2>'|urlize }}"}),
    Case("if and for inside a tag", {"page.html": "<input value=\"{{ name }}\" {% if n %}checked{% endif %}>"
                                                  "<option {{ 'selected' if n > 2 }}>o</option><div "
                                                  "{% for k, v in d|dictsort %}data-{{ k }}=\"{{ v }}\" {% endfor %}>x</div>"}),
    Case("value where PTL refuses one", {"page.html": "<{{ tag }} class=x>{{ name }}</{{ tag }}>"}, "reported",
         extra={"tag": "b"}),
    # -- contextual escaping: more escaping than Jinja2 ---------------------------------------
    Case("URL attributes", {"page.html": "<a href=\"{{ link }}\">x</a>"}, "documented",
         ours="about:invalid#ptl-unsafe-url", extra={"link": "javascript:alert(1)"}),
    Case("script values", {"page.html": "<script>var s = \"{{ name }}\";</script>"}, "documented",
         ours="\\x"),
    *_filter_cases(),
    *_test_cases(),
]  # fmt: skip


# A small Flask app of our own, in the shape Flask apps have (a layout, g.user, a form that
# reads request.form on GET too, flashed messages, url_for), converted by the command line
# as a user runs it, then served by Flask: each page as Jinja2 renders it and as PTL does.
FLASK_TEMPLATES = {
    "layout.html": (
        "<!doctype html>\n<title>{% block title %}{% endblock %} | Notes</title>\n"
        "<nav><a href=\"{{ url_for('index') }}\">Notes</a>\n"
        "{% if g.user %}<span>{{ g.user['name'] }}</span>{% else %}"
        "<a href=\"{{ url_for('index', login=1) }}\">Log in</a>{% endif %}</nav>\n"
        "{% for message in get_flashed_messages() %}<p class=flash>{{ message }}</p>{% endfor %}\n"
        "<main>{% block header %}<h1>{% block heading %}{{ self.title() }}{% endblock %}</h1>"
        "{% endblock %}{% block content %}{% endblock %}</main>\n"
    ),
    "notes/list.html": (
        "{% extends 'layout.html' %}\n{% from 'notes/_macros.html' import note_card %}\n"
        "{% block title %}Notes of {{ owner }}{% endblock %}\n"
        "{% block content %}<form method=post><input name=title value=\"{{ request.form['title'] }}\">"
        "</form>\n{% for note in notes %}{{ note_card(note, loop.index) }}"
        "{% if g.user['id'] == note.author %}<a href=\"{{ url_for('index', edit=note.id) }}\">Edit</a>"
        "{% endif %}{% if not loop.last %}<hr>{% endif %}\n{% else %}<p>No notes.</p>{% endfor %}"
        "{% endblock %}\n"
    ),
    "notes/_macros.html": (
        '{% macro note_card(note, n) -%}\n<article id="note-{{ n }}"><h2>{{ note.title|title }}</h2>'
        "<p>{{ note.body|truncate(30) }}</p><small>{{ note.tags|join(', ') or 'untagged' }}</small>"
        "</article>\n{%- endmacro %}\n"
    ),
}
