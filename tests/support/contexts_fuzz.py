"""A differential fuzzer for contextual escaping: the browser is the oracle (issue #26).

A grammar writes the trusted literal markup of an ``[html]`` template around one
value, in every context the engine knows (text, attributes, URLs, scripts, styles,
comments, srcdoc, SVG and MathML, framework attributes, JSON scripts), with
balanced decorations before and after it, cuts the literal at random places into
several output statements, and puts the value in with a random style (its own
statement, ``%``, an f-string, ``.format``, an ``if`` or a ``for``, or as two values
in a row).  Each case is compiled
(a refusal, a located ``SyntaxError``, is counted and fine), rendered with
sentinels (hostile values that call ``__ptl_hit(n)`` if they ever run, numbers,
plain data) and loaded in headless Chromium, one ``<iframe srcdoc>`` per render,
so that one breakout cannot hide another.  The oracle:

* no sentinel executes (the hooks of tests/support/browser.py, ``__ptl_hit``, script
  URLs, event handlers and framework attributes provoked);
* the case's own markup reads the value back where the context carries data
  (the text node, the attribute, the JS string stored by the case's script, the
  decoded URL component, the CSS string) and it must equal the value;
* the harness's canary after the template's output still runs (the template
  closed what it opened);
* for text and attribute contexts html5lib's parser must see the value as the
  one text node or attribute value of the expected element;
* the engine's context for the value is the same whether the literal before it
  is parsed whole or in the pieces the template outputs.

Generation uses a seeded :class:`random.Random`, not hypothesis: a case is only
worth something in a batch (a hundred frames in one page load), which does not
fit hypothesis's one-example-per-call model, and a fixed seed list gives the same
cases on every bounded run while ``make fuzz-contexts`` draws new seeds and
prints each failure, shrunk by :func:`shrink`, as a template to paste into a
regression test.

Run ``python tests/support/contexts_fuzz.py --help`` for the long run.
"""

from __future__ import annotations

import argparse
import html
import itertools
import json
import random
import re
import sys
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote

sys.path.insert(0, str(Path(__file__).resolve().parent))

from browser import HOOKS, chromium_path

from ptl_wsgi.beyond_escaping import UNSAFE_URL
from ptl_wsgi.escapers import UNSAFE_CSS
from ptl_wsgi.escaping import context as htmlcontext
from ptl_wsgi.html import htmltext

SLOT = "\x00SLOT\x00"  # where the value goes in a case's literal markup

# -- sentinels -------------------------------------------------------------------------

# Hostile values: each calls __ptl_hit(n) (or a dialog the hooks record) if it runs.
HOSTILE = [
    '";__ptl_hit(1);//',
    "';__ptl_hit(2);//",
    "javascript:__ptl_hit(3)",
    "</script><script>__ptl_hit(4)</script>",
    "x onmouseover=__ptl_hit(5) y",
    "'-__ptl_hit(6)-'",
    "${__ptl_hit(7)}",
    "*/__ptl_hit(8)/*",
    "expression(__ptl_hit(9))",
    '"><img src=x onerror=__ptl_hit(10)>',
    "--><img src=x onerror=__ptl_hit(11)>",
    "`+__ptl_hit(12)+`",
    "</style><img src=x onerror=__ptl_hit(13)>",
    "\u2028__ptl_hit(14)",
    "__ptl_hit(15)",
    "/.source+__ptl_hit(16)+/",
    '\\";__ptl_hit(17)//',
    "]]><img src=x onerror=__ptl_hit(18)>",
    "</title></textarea><img src=x onerror=__ptl_hit(19)>",
    "&quot;);__ptl_hit(20);//",
    "data:text/html,<script>alert(21)</script>",
    " \tjava\nscript:__ptl_hit(22)",
    "<!--<script>",
    "</script",
    "'\n__ptl_hit(23)//",
    "x\\",
    "-->\n__ptl_hit(24)",
    "1;__ptl_hit(25)",
    "red;background:url(javascript:__ptl_hit(26))",
    "<svg onload=__ptl_hit(27)>",
    "-__ptl_hit(28)-",
    "//evil.example/x",
    "javascript",
    " Java\tScript",
    "script",
    "a&amp;b &#106; &lt;",
]
# Values that are plain data: they must arrive intact wherever the context carries data.
DATA: list[Any] = [
    "plain words",
    "",
    "100% & <b>bold</b> \"q\" 'a' `b`",
    "é ☃ \U0001f600 \u00a0",
    "line\nbreak\ttab",
    42,
    -1,
    3.5,
    0,
]
SENTINELS: list[Any] = HOSTILE + DATA


# -- the grammar -----------------------------------------------------------------------


@dataclass(frozen=True)
class Recipe:
    """Literal markup around one value, and how the case reads the value back.

    *check* names the expectation (see :func:`expected_ok`); *read* is a JS
    expression evaluated in the case's frame after load and provoking.  *html5*
    is ``(element id, attribute or None, prefix, suffix)`` for the html5lib
    cross-check of text and attribute contexts.
    """

    name: str
    context: str  # a coarse name of the context, for the summary
    before: str
    after: str
    check: str
    read: str
    prefix: str = ""  # the data around the value, as the browser decodes it
    suffix: str = ""
    html5: tuple[str, str | None, str, str] | None = None


def _words(rng: random.Random) -> str:
    return rng.choice(["", "a ", "Hello, ", "x&amp;y ", "&lt;tag&gt; ", "caf&eacute; ", "n&#233; "])


def _tail(rng: random.Random) -> str:
    return rng.choice(["", " b", ".", " &amp; more", " &#x3C;/p&#x3E;"])


ELEMENT = "document.getElementById('ptlc')"
GOT = "window.__ptl_got"


def text_recipes(rng: random.Random) -> list[Recipe]:
    a, b = _words(rng), _tail(rng)
    da, db = html.unescape(a), html.unescape(b)
    tag = rng.choice(["p", "div", "span", "b", "em", "h1", "button", "label", "td"])
    open_, close = f"<{tag} id=ptlc>", f"</{tag}>"
    if tag == "td":
        open_, close = "<table><tr><td id=ptlc>", "</td></tr></table>"
    out = [
        Recipe(
            "text",
            "text",
            open_ + a,
            b + close,
            "text",
            f"{ELEMENT}.textContent",
            da,
            db,
            ("ptlc", None, da, db),
        ),
        Recipe(
            "title",
            "rcdata",
            "<title id=ptlc>" + a,
            b + "</title>",
            "text",
            f"{ELEMENT}.textContent",
            da,
            db,
            ("ptlc", None, da, db),
        ),
        Recipe(
            "textarea",
            "rcdata",
            "<textarea id=ptlc>x" + a,
            b + "</textarea>",
            "text",
            f"{ELEMENT}.value",
            "x" + da,
            db,
            ("ptlc", None, "x" + da, db),
        ),
        Recipe(
            "option",
            "text",
            "<select><option id=ptlc>" + a,
            b + "</option></select>",
            "text",
            f"{ELEMENT}.textContent",
            da,
            db,
            ("ptlc", None, da, db),
        ),
    ]
    raw = rng.choice(["xmp", "noscript", "noembed", "noframes", "iframe"])
    out.append(
        Recipe(f"rawtext {raw}", "rawtext", f"<{raw} id=ptlc>{a}", f"{b}</{raw}>", "rawtext",
               f"{ELEMENT}.textContent", a, b)
    )  # fmt: skip
    return out


def attribute_recipes(rng: random.Random) -> list[Recipe]:
    a = rng.choice(["", "a ", "x&amp;", "&quot;"])
    b = rng.choice(["", " z", "&#39;"])
    da, db = html.unescape(a), html.unescape(b)
    name = rng.choice(["title", "class", "data-x", "alt", "value", "aria-label", "placeholder"])
    tag = rng.choice(["p", "img", "input", "a"])
    out = []
    for quote in ('"', "'"):
        out.append(
            Recipe(f"attribute {quote}", "quoted attribute",
                   f"<{tag} id=ptlc {name}={quote}{a}", f"{b}{quote}>x", "text",
                   f"{ELEMENT}.getAttribute({name!r})", da, db, ("ptlc", name, da, db))
        )  # fmt: skip
    ua = rng.choice(["", "a"])
    ub = rng.choice(["", "z"])
    out.append(
        Recipe("attribute unquoted", "unquoted attribute", f"<{tag} id=ptlc {name}={ua}",
               f"{ub}>x", "text", f"{ELEMENT}.getAttribute({name!r})", ua, ub,
               ("ptlc", name, ua, ub))
    )  # fmt: skip
    end = rng.choice(["", " title=t", " /"])
    out.append(
        Recipe("attribute unquoted, space after", "unquoted attribute",
               f"<{tag} id=ptlc {name}={ua}", f"{ub}{end} data-k=1>x", "text",
               f"{ELEMENT}.getAttribute({name!r})", ua, ub, ("ptlc", name, ua, ub))
    )  # fmt: skip
    return out


def url_recipes(rng: random.Random) -> list[Recipe]:
    tag, attr = rng.choice(
        # (no element that loads a document: an error page per frame costs too much)
        [("a", "href"), ("img loading=lazy", "src"), ("form", "action"),
         ("button", "formaction"), ("video", "poster"), ("blockquote", "cite"), ("a", "ping"),
         ("div", "data-url"), ("area", "href"), ("script", "src"), ("link rel=icon", "href")]
    )  # fmt: skip
    end = tag.split()[0]
    quote = rng.choice(['"', "'", ""])
    out = []
    parts = [
        ("url start", "", ""),
        ("url start", "", rng.choice(["/x", "?a=1", "#f", ""])),
        ("url path", rng.choice(["/p/", "https://example.com/p/", "p/"]), ""),
        ("url after slash", "/", ""),
        ("url query", rng.choice(["/s?q=", "?q=", "https://h.example/s?a=1&amp;q="]),
         rng.choice(["", "&amp;r=2", "#frag"])),
        ("url fragment", rng.choice(["#", "/p#"]), ""),
    ]  # fmt: skip
    for name, pre, post in parts:
        if quote == "" and (pre + post == "" or name == "url start") and rng.random() < 0.5:
            post += " "
        out.append(
            Recipe(name, f"URL ({name[4:]})", f"<{tag} id=ptlc {attr}={quote}{pre}",
                   f"{post}{quote}>x</{end}>" if end not in ("img", "area", "link")
                   else f"{post}{quote}>", "url",
                   f"{ELEMENT}.getAttribute({attr!r})", html.unescape(pre),
                   html.unescape(post.strip()))
        )  # fmt: skip
    q = rng.choice(['"', "'"])
    out.append(
        Recipe("srcset", "srcset", f"<img loading=lazy id=ptlc srcset={q}", f" 2x{q}>", "url",
               f"{ELEMENT}.getAttribute('srcset')", "", " 2x")
    )  # fmt: skip
    out.append(
        Recipe("svg a href", "SVG URL", f"<svg><a id=ptlc href={q}",
               f"{q}><text>x</text></a></svg>", "url", f"{ELEMENT}.getAttribute('href')", "", "")
    )  # fmt: skip
    out.append(
        Recipe("svg xlink:href", "SVG URL", f"<svg><a id=ptlc xlink:href={q}",
               f"{q}><text>x</text></a></svg>", "url",
               f"{ELEMENT}.getAttributeNS('http://www.w3.org/1999/xlink', 'href')", "", "")
    )  # fmt: skip
    return out


# JavaScript before a value: regexps, divisions, comments, strings.
JS_PRELUDES = [
    "",
    "var a = 4, b = 2, g = 1; ",
    "var d = a / b / g; ",
    "var r = /[/\"'`]/.test('x'); ",
    "var t = (a) / 2; ",
    "if (a) /\"/.test(''); ",
    "if (a) /* c */ /\"/.test(''); ",
    "if (a) // c\n/'/.test(''); ",
    "while (0) /`/.test(''); ",
    "var k = x\n/2/g; ",
    "var u = a++ / 2; ",
    "var w = typeof /x/; ",
    "// a comment with \" and ' and `\n",
    "/* a block comment with \" ' ` */ ",
    'var s0 = "it\'s", s1 = \'say "hi"\', s2 = `t ${1 + 1} t`; ',
    "var o = {a: 1}; ",
    "var re = /=/g, e = 1 / 1 /* x */; ",
    "var m = 'a' + \"b\" + `c`; ",
    "x = a\n/1/g; ",
    "var lt = 1 < 2, gt = 2 > 1; ",
    "var n = 1; n-->0; ",
    "var q = [1, 2].map((i) => i / 2); ",
    "var tp = `${`${'nested'}`}`; ",
    "var c = '<!--'; ",
    "var cc = '-->'; ",
]
JS_SETUP = "var a = 4, b = 2, g = 1, x = 0; "


def js_recipes(rng: random.Random) -> list[Recipe]:
    pre = JS_SETUP + rng.choice(JS_PRELUDES)
    post = rng.choice(["", " var z = 1 / 2;", " // end", " /* end */"])
    open_ = rng.choice(["<script>", '<script type="text/javascript">', "<script type=module>"])
    if "type=module" in open_ and rng.random() < 0.5:
        open_ = "<script>"  # (and never with <!--: HTML-like comments are not module code)
    sa, sb = rng.choice(["", "a", "\\n"]), rng.choice(["", "z"])
    dsa = {"\\n": "\n"}.get(sa, sa)
    out = []
    for quote in ('"', "'", "`"):
        out.append(
            Recipe(f"script string {quote}", f"JS string {quote}",
                   f"{open_}{pre}var s = {quote}{sa}", f"{sb}{quote}; __ptl_put(s);{post}</script>",
                   "got", GOT, dsa, sb)
        )  # fmt: skip
    out.append(
        Recipe("script template after ${}", "JS template literal",
               f"{open_}{pre}__ptl_put(`a${{1 + 1}}b", "c`);</script>", "got", GOT, "a2b", "c")
    )  # fmt: skip
    out.append(
        Recipe("script string in ${}", "JS string in ${}",
               f"{open_}{pre}__ptl_put(`a${{'", "'}b`);</script>", "got", GOT, "a", "b")
    )  # fmt: skip
    out.append(
        Recipe("script expression in ${}", "JS expression in ${}",
               f"{open_}{pre}__ptl_put(`a${{", "}b`);</script>", "got_str", GOT, "a", "b")
    )  # fmt: skip
    expr_before, expr_after = rng.choice(
        [("var v = ", "; __ptl_put(v);"), ("__ptl_put(", ");"), ("__ptl_put({k: ", "}.k);"),
         ("__ptl_put((function () { return ", "; })());"), ("__ptl_put([0,", "][1]);"),
         ("x = a ? ", " : 0; __ptl_put(x);"), ("__ptl_put(typeof x === 'number' &&", ");")]
    )  # fmt: skip
    out.append(
        Recipe("script expression", "JS expression", f"{open_}{pre}{expr_before}",
               f"{expr_after}{post}</script>", "got_value" if "typeof" not in expr_before
               else "got_any", GOT)
    )  # fmt: skip
    flags = rng.choice(["", "u", "i"])
    out.append(
        Recipe("script regexp", "JS regexp", f"{open_}{pre}__ptl_put(/^",
               f"$/{flags}.test(__ptl_value));</script>", "got_true", GOT)
    )  # fmt: skip
    out.append(
        Recipe("script regexp class", "JS regexp", f"{open_}{pre}__ptl_put(/^[",
               "]*$/.test(__ptl_value));</script>", "got_true", GOT)
    )  # fmt: skip
    out.append(
        Recipe("script line comment", "JS comment", f"{open_}{pre}// c ",
               " c\n__ptl_put('ok');</script>", "got_ok", GOT)
    )  # fmt: skip
    out.append(
        Recipe("script block comment", "JS comment", f"{open_}{pre}/* c ",
               " c */ __ptl_put('ok');</script>", "got_ok", GOT)
    )  # fmt: skip
    out.append(
        Recipe("script in <!--", "JS string after <!--",
               f"{open_.replace(' type=module', '')}<!--\n{pre}var s = \"",
               "\"; __ptl_put(s);\n//--></script>", "got", GOT)
    )  # fmt: skip
    return out


def handler_recipes(rng: random.Random) -> list[Recipe]:
    event = rng.choice(["onclick", "onmouseover", "onfocus", "ONCLICK", "onpointerdown"])
    tag = rng.choice(["button", "div", "a"])
    quote = rng.choice(['"', "'"])
    inner = "'" if quote == '"' else '"'
    out = [
        Recipe("handler string", "event handler string",
               f"<{tag} id=ptlc {event}={quote}__ptl_put({inner}a", f"b{inner}){quote}>x</{tag}>",
               "got", GOT, "a", "b"),
        Recipe("handler entity-quoted string", "event handler string",
               f'<{tag} id=ptlc {event}="__ptl_put(&quot;', f'&quot;)">x</{tag}>', "got", GOT),
        Recipe("handler template", "event handler template literal",
               f"<{tag} id=ptlc {event}={quote}__ptl_put(`", f"`){quote}>x</{tag}>", "got", GOT),
        Recipe("handler expression", "event handler expression",
               f"<{tag} id=ptlc {event}={quote}__ptl_put(", f"){quote}>x</{tag}>", "got_value",
               GOT),
        Recipe("handler unquoted expression", "event handler expression",
               f"<{tag} id=ptlc {event}=__ptl_put(", f")>x</{tag}>", "got_value", GOT),
        Recipe("handler regexp", "event handler regexp",
               f"<{tag} id=ptlc {event}={quote}__ptl_put(/^",
               f"$/.test(__ptl_value)){quote}>x</{tag}>", "got_true", GOT),
    ]  # fmt: skip
    framework = rng.choice(
        ["hx-on:click", "hx-on::after-request", "hx-on-click", "x-init", "x-data", "@click",
         "x-on:click", "v-on:click", ":title", "x-bind:title", "v-bind:title", "ng-click",
         "data-bind", "data-x-init", "x-show", "x-effect"]
    )  # fmt: skip
    out.append(
        Recipe(f"framework {framework}", "framework attribute",
               f"<div id=ptlc {framework}={quote}__ptl_put({inner}", f"{inner}){quote}>x</div>",
               "got", GOT)
    )  # fmt: skip
    out.append(
        Recipe("framework x-data object", "framework attribute",
               f"<div id=ptlc x-data={quote}{{ s: __ptl_put({inner}", f"{inner}) }}{quote}>x</div>",
               "got", GOT)
    )  # fmt: skip
    return out


def css_recipes(rng: random.Random) -> list[Recipe]:
    prop = rng.choice(["color", "font-family", "width", "background"])
    pre = rng.choice(["", "/* c */ ", "p { color: red } "])
    out = [
        Recipe("style value", "CSS value", f"<style id=ptls>{pre}#ptlc {{ {prop}: ",
               " }</style><p id=ptlc>x</p>", "css", "document.getElementById('ptls').textContent",
               f"{pre}#ptlc {{ {prop}: ", " }"),
        Recipe("style attribute value", "CSS value in style=",
               f'<p id=ptlc style="{prop}: ', '">x</p>', "css",
               f"{ELEMENT}.getAttribute('style')", f"{prop}: ", ""),
        Recipe("style attribute second value", "CSS value in style=",
               f"<p id=ptlc style='margin: 0; {prop}: ", "; padding: 0'>x</p>", "css",
               f"{ELEMENT}.getAttribute('style')", f"margin: 0; {prop}: ", "; padding: 0"),
    ]  # fmt: skip
    for quote in ('"', "'"):
        out.append(
            Recipe(f"style string {quote}", "CSS string",
                   f"<style id=ptls>#ptlc::after {{ content: {quote}a", f"b{quote} }}</style>"
                   "<p id=ptlc>x</p>", "css_string", "document.getElementById('ptls').textContent",
                   f"#ptlc::after {{ content: {quote}a", f"b{quote} }}")
        )  # fmt: skip
    aq = rng.choice(['"', "'"])
    sq = "'" if aq == '"' else '"'
    out.append(
        Recipe("style attribute string", "CSS string in style=",
               f"<p id=ptlc style={aq}font-family: {sq}", f"{sq}{aq}>x</p>", "css_string",
               f"{ELEMENT}.getAttribute('style')", f"font-family: {sq}", sq)
    )  # fmt: skip
    for uq in ("", '"', "'"):
        out.append(
            Recipe(f"style url({uq})", "CSS url()",
                   f"<style id=ptls>#ptlc {{ background: url({uq}",
                   f"{uq}) }}</style><p id=ptlc>x</p>", "url",
                   "document.getElementById('ptls').textContent",
                   f"#ptlc {{ background: url({uq}", f"{uq}) }}")
        )  # fmt: skip
    out.append(
        Recipe("style attribute url()", "CSS url() in style=",
               "<p id=ptlc style=\"background: url('", "')\">x</p>", "url",
               f"{ELEMENT}.getAttribute('style')", "background: url('", "')")
    )  # fmt: skip
    out.append(
        Recipe("style comment", "CSS comment",
               "<style id=ptls>/* c ",
               " c */ #ptlc { color: rgb(1, 2, 3) }</style><p id=ptlc>x</p>", "canary_color",
               f"getComputedStyle({ELEMENT}).color")
    )  # fmt: skip
    return out


def other_recipes(rng: random.Random) -> list[Recipe]:
    q = rng.choice(['"', "'"])
    return [
        Recipe("html comment", "HTML comment", "<div id=ptlc><!-- a ", " b --></div>", "comment",
               f"(n => n.length === 1 && n[0].nodeType === 8 ? n[0].data : null)"
               f"({ELEMENT}.childNodes)", " a ", " b "),
        Recipe("srcdoc text", "srcdoc text", f"<iframe id=ptlc srcdoc={q}<p id=in>a",
               f"b</p>{q}></iframe>", "text",
               f"{ELEMENT}.contentDocument.getElementById('in').textContent", "a", "b"),
        Recipe("srcdoc attribute", "srcdoc attribute",
               '<iframe id=ptlc srcdoc="<p id=in title=&quot;', '&quot;>x</p>"></iframe>', "text",
               f"{ELEMENT}.contentDocument.getElementById('in').title"),
        Recipe("svg title", "SVG text", "<svg><title id=ptlc>", "</title></svg>", "text",
               f"{ELEMENT}.textContent", "", "", ("ptlc", None, "", "")),
        Recipe("svg text", "SVG text", "<svg><text id=ptlc>a", "b</text></svg>", "text",
               f"{ELEMENT}.textContent", "a", "b", ("ptlc", None, "a", "b")),
        Recipe("svg attribute", "SVG attribute", f"<svg><rect id=ptlc class={q}", f"{q} /></svg>",
               "text", f"{ELEMENT}.getAttribute('class')", "", "", ("ptlc", "class", "", "")),
        Recipe("svg script", "SVG script", "<svg><script>__ptl_put(\"", "\")</script></svg>",
               "got", GOT),
        Recipe("svg script expression", "SVG script", "<svg><script>__ptl_put(",
               ")</script></svg>", "got_value", GOT),
        Recipe("svg script CDATA", "SVG script CDATA",
               "<svg><script><![CDATA[__ptl_put(\"", "\")]]></script></svg>", "got", GOT),
        Recipe("svg script CDATA end tag", "SVG script CDATA",
               "<svg><script><![CDATA[var e = '</script>'; __ptl_put(", ")]]></script></svg>",
               "got_value", GOT),
        Recipe("svg script entity string", "SVG script",
               "<svg><script>__ptl_put(&quot;", "&quot;)</script></svg>", "got", GOT),
        Recipe("svg foreignObject script entity string", "foreignObject script",
               "<svg><foreignObject><script>__ptl_put(&quot;",
               "&quot;)</script></foreignObject></svg>", "got", GOT),
        Recipe("svg text CDATA", "SVG CDATA text", "<svg><text id=ptlc><![CDATA[a",
               "b]]></text></svg>", "text", f"{ELEMENT}.textContent", "a", "b"),
        Recipe("svg desc script entity string (integration point)", "SVG desc script",
               "<svg><desc><script>__ptl_put(&quot;", "&quot;)</script></desc></svg>", "got",
               GOT),
        Recipe("math mi script (integration point)", "MathML script",
               "<math><mi><script>__ptl_put(\"", "\")</script></mi></math>", "got", GOT),
        Recipe("math mtext script entity string", "MathML script",
               "<math><mtext><script>__ptl_put(&quot;", "&quot;)</script></mtext></math>", "got",
               GOT),
        Recipe("svg style", "SVG style", "<svg><style id=ptls>#ptlc { fill: ",
               " }</style><rect id=ptlc /></svg>", "css",
               "document.getElementById('ptls').textContent", "#ptlc { fill: ", " }"),
        Recipe("svg foreignObject text", "foreignObject text",
               "<svg><foreignObject><p id=ptlc>", "</p></foreignObject></svg>", "text",
               f"{ELEMENT}.textContent", "", "", ("ptlc", None, "", "")),
        Recipe("svg foreignObject script", "foreignObject script",
               "<svg><foreignObject><script>__ptl_put(\"", "\")</script></foreignObject></svg>",
               "got", GOT),
        Recipe("math mtext", "MathML text", "<math><mtext id=ptlc>", "</mtext></math>", "text",
               f"{ELEMENT}.textContent", "", "", ("ptlc", None, "", "")),
        Recipe("math mi", "MathML text", "<math><mi id=ptlc>", "</mi></math>", "text",
               f"{ELEMENT}.textContent", "", "", ("ptlc", None, "", "")),
        Recipe("math mtext script", "MathML script",
               "<math><mtext><script>__ptl_put(\"", "\")</script></mtext></math>", "got", GOT),
        Recipe("json script", "JSON script",
               f"<script id=ptlj type={rng.choice(['application/json', 'application/ld+json'])}>"
               '{"k": "', '"}</script>', "json", "document.getElementById('ptlj').textContent"),
    ]  # fmt: skip


ATTRIBUTE_NAMES = (
    "[...document.getElementById('ptlc').attributes].map(a => a.name).filter(n => n !== 'id')"
)


def edge_recipes(rng: random.Random) -> list[Recipe]:
    """Places where a value may go only in a narrow form, or not at all (a refusal)."""
    q = rng.choice(['"', "'"])
    return [
        Recipe("attribute names", "between attributes", "<input id=ptlc ", ">",
               "attr_names", ATTRIBUTE_NAMES),
        Recipe("attribute names after a quoted value", "between attributes",
               '<input id="ptlc"', " >", "attr_names", ATTRIBUTE_NAMES),
        Recipe("attribute names after the tag name", "after a tag name", "<input", " id=ptlc>",
               "attr_names", ATTRIBUTE_NAMES),
        Recipe("animation values", "SVG animation values",
               f"<svg><a><animate id=ptlc attributeName=href dur=0.01s fill=freeze values={q}",
               f"{q} /><text y=20>x</text></a></svg>", "url",
               f"{ELEMENT}.getAttribute('values')"),
        Recipe("animation values scheme completed by a literal", "SVG animation values",
               f"<svg><a><animate id=ptlc attributeName=href dur=0.01s fill=freeze values={q}java",
               f":__ptl_hit(93){q} /><text y=20>x</text></a></svg>", "url",
               f"{ELEMENT}.getAttribute('values')", "java", ":__ptl_hit(93)"),
        Recipe("scheme before a literal colon", "URL (scheme)", f"<a id=ptlc href={q}",
               f":__ptl_hit(90){q}>x</a>", "url", f"{ELEMENT}.getAttribute('href')", "",
               ":__ptl_hit(90)"),
        Recipe("scheme completed by a literal", "URL (scheme)", f"<a id=ptlc href={q}java",
               f"script:__ptl_hit(91){q}>x</a>", "url", f"{ELEMENT}.getAttribute('href')",
               "java", "script:__ptl_hit(91)"),
        Recipe("scheme prefix by a value", "URL (scheme)", f"<a id=ptlc href={q}",
               f"script:__ptl_hit(92){q}>x</a>", "url", f"{ELEMENT}.getAttribute('href')", "",
               "script:__ptl_hit(92)"),
        Recipe("script URL body", "javascript: URL", f"<a id=ptlc href={q}javascript:__ptl_put(`",
               f"`){q}>x</a>", "got", GOT),
        Recipe("after a literal &", "attribute after &", f"<p id=ptlc title={q}a&",
               f"{q}>x</p>", "text", f"{ELEMENT}.getAttribute('title')", "a&"),
        Recipe("srcdoc script", "srcdoc script",
               "<iframe id=ptlc srcdoc=\"<script>parent.__ptl_put('", "')</script>\"></iframe>",
               "got", GOT),
        Recipe("srcdoc start", "srcdoc text", f"<iframe id=ptlc srcdoc={q}", f"{q}></iframe>",
               "text_lstrip", f"{ELEMENT}.contentDocument.body.textContent"),
        Recipe("tag name", "tag name", "<h", " id=ptlc>x</h1>", "none", GOT),
        Recipe("attribute name", "attribute name", "<p id=ptlc data-", "=1>x</p>", "none", GOT),
        Recipe("doctype", "doctype", "<!DOCTYPE ", ">", "none", GOT),
        Recipe("template element", "text in <template>", "<template id=ptlt><p id=ptlc>a",
               "b</p></template>", "text",
               "document.getElementById('ptlt').content.getElementById('ptlc').textContent",
               "a", "b"),
        Recipe("script text/template", "script text/template",
               "<script type=text/template id=ptlj><p>", "</p></script>", "none", GOT),
    ]  # fmt: skip


RECIPE_GROUPS: list[Callable[[random.Random], list[Recipe]]] = [
    edge_recipes,
    text_recipes,
    attribute_recipes,
    url_recipes,
    js_recipes,
    handler_recipes,
    css_recipes,
    other_recipes,
]

# Balanced markup around a case (each ends in text); literals are cut inside them too.
DECORATIONS = [
    "<b>x</b>",
    "<br>",
    "<!-- c -->",
    '<img alt="a>b">',
    "<span title='t'>s</span>",
    "&amp; &lt; &#38; &#x26; &copy; &nbsp",
    "<script>var q = 1 / 2; var r = /</.test('<');</script>",
    "<style>p { color: red }</style>",
    "<textarea>t</textarea>",
    "<svg><circle r=1 /></svg>",
    "<input value=x>",
    "<title>T</title>",
    "<math><mi>x</mi></math>",
    "<p class=a>",
    "</p>",
    "text ",
]

STYLES = [
    "statements", "percent", "tuple", "fstring", "format", "dict", "branch", "loop", "keyword",
    "nested",
]  # fmt: skip


@dataclass
class Case:
    """A template: decorations, a recipe, where its literal is cut, how the value goes in."""

    recipe: Recipe
    prefix: list[str]
    suffix: list[str]
    cuts: list[int]  # offsets into literal(), where one output statement ends
    style: str
    ident: str = ""
    runtime: str = ""  # "percent" or "format": the run-time path, not compiled

    def literal(self) -> str:
        return (
            "".join(self.prefix)
            + self.recipe.before
            + SLOT
            + self.recipe.after
            + "".join(self.suffix)
        )

    def segments(self) -> tuple[list[str], list[str]]:
        """The literal cut into pieces: those before the value, those after."""
        text = self.literal()
        slot = text.index(SLOT)
        before, after = text[:slot], text[slot + len(SLOT) :]
        cuts_b = sorted({c for c in self.cuts if 0 < c < len(before)})
        cuts_a = sorted({c - slot - len(SLOT) for c in self.cuts if slot < c - len(SLOT)})
        cuts_a = [c for c in cuts_a if 0 < c < len(after)]
        return _cut(before, cuts_b), _cut(after, cuts_a)

    def source(self) -> str:
        """The case as a .ptl module defining ``f(v)``."""
        before, after = self.segments()
        lines = [repr(piece) for piece in before[:-1] if piece]
        b, a = before[-1], after[0]
        value_lines = _value_statement(self.style, b, a)
        lines += value_lines
        lines += [repr(piece) for piece in after[1:] if piece]
        body = "".join(f"    {line}\n" for line in lines) or "    pass\n"
        return f"def f [html] (v):\n{body}"

    def format_string(self, kind: str) -> str:
        """The whole literal as a run-time format string: ``%s`` or ``{}`` for the value."""
        text = self.literal()
        if kind == "percent":
            return text.replace("%", "%%").replace(SLOT, "%s")
        return text.replace("{", "{{").replace("}", "}}").replace(SLOT, "{}")


def _cut(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *cuts, len(text)]
    return [text[i:j] for i, j in itertools.pairwise(bounds)]


def _value_statement(style: str, b: str, a: str) -> list[str]:
    def braces(text: str) -> str:
        return text.replace("{", "{{").replace("}", "}}")

    def percent(text: str) -> str:
        return text.replace("%", "%%")

    if style == "percent":
        return [f"{percent(b) + '%s' + percent(a)!r} % v"]
    if style == "tuple":
        return [f"{percent(b) + '%s' + percent(a)!r} % (v,)"]
    if style == "dict":
        return [f"{percent(b) + '%(v)s' + percent(a)!r} % {{'v': v}}"]
    if style == "fstring":
        return [f"f{braces(b) + '{v}' + braces(a)!r}"]
    if style == "format":
        return [f"{braces(b) + '{}' + braces(a)!r}.format(v)"]
    if style == "keyword":
        return [f"{braces(b) + '{x}' + braces(a)!r}.format(x=v)"]
    if style == "nested":  # a literal f-string in a field: a plain value
        outer = repr(braces(b) + "{}" + braces(a))
        inner = "f'{v}'" if outer[0] == '"' else 'f"{v}"'  # (no quote reused before 3.12)
        return ["f" + outer.replace("{}", "{" + inner + "}", 1)]
    lines = [repr(b)] if b else []
    if style == "branch":
        lines += ["if v is not None:", "    v", "else:", "    'None'"]
    elif style == "loop":
        lines += ["for x in (v,):", "    x"]
    elif style in ("halves", "halves_branch"):
        # The value as two values in a row (the second maybe in a branch): the engine's
        # context after a value, and where branches join, are exercised too.
        lines += ["h = str(v)", "str(v)[: len(h) // 2]"]
        second = "h[len(h) // 2 :]"
        lines += [f"if {second}:", f"    {second}"] if style == "halves_branch" else [second]
    else:
        lines.append("v")
    return lines + ([repr(a)] if a else [])


_TAG_NAMES = re.compile(r"(?<=<)/?(?:script|style|title|textarea|svg|math|iframe|a|p|div)\b")
_END_TAG = re.compile(r"(</[a-z]+)>", re.IGNORECASE)
_LAST_EQUALS = re.compile(r"(\s[\w:@.-]+)=([\"']?)\Z")


def vary(recipe: Recipe, rng: random.Random) -> Recipe:
    """*recipe* written another way a browser reads the same: tag names in capitals, spaces
    before an end tag's ``>``, around the ``=`` of the value's attribute, other spaces."""
    before, after = recipe.before, recipe.after
    if rng.random() < 0.5:
        before = _TAG_NAMES.sub(lambda m: m.group().upper(), before)
        after = _TAG_NAMES.sub(lambda m: m.group().upper(), after)
    if rng.random() < 0.5:
        space = rng.choice([" ", "\n", "\t", "\f"])
        after = _END_TAG.sub(lambda m: m.group(1) + space + ">", after, count=1)
    if rng.random() < 0.5:
        before = _LAST_EQUALS.sub(lambda m: m.group(1) + " = " + m.group(2), before)
    if rng.random() < 0.5:
        before = before.replace(
            " id=ptlc ", rng.choice(["\nid=ptlc\n", "\tid=ptlc\f", "  id=ptlc  "])
        )
    return replace(recipe, before=before, after=after)


# The checks whose value may arrive in two pieces (not a JS number, not one CSS token).
HALVES = frozenset({"text", "text_lstrip", "rawtext", "got", "got_true", "got_ok", "comment",
                    "css_string", "url", "none", "canary_color"})  # fmt: skip


def generate(seed: int, count: int) -> list[Case]:
    """*count* cases from *seed*: recipes in turn, decorations, cuts and styles at random."""
    rng = random.Random(seed)
    cases: list[Case] = []
    turn = seed % len(RECIPE_GROUPS)  # (a short run of a seed still starts somewhere new)
    while len(cases) < count:
        group = RECIPE_GROUPS[turn % len(RECIPE_GROUPS)]
        turn += 1
        for recipe in group(rng):
            prefix = [rng.choice(DECORATIONS) for _ in range(rng.choice([0, 0, 1, 2]))]
            suffix = [rng.choice(DECORATIONS) for _ in range(rng.choice([0, 0, 1]))]
            if "<p class=a>" in prefix and "</p>" not in suffix:
                prefix.remove("<p class=a>")
            style = rng.choice(STYLES)
            if style == "branch" and recipe.check in HALVES and rng.random() < 0.6:
                style = rng.choice(["halves", "halves_branch"])
            if rng.random() < 0.3:
                recipe = vary(recipe, rng)
            case = Case(recipe, prefix, suffix, [], style)
            length = len(case.literal()) - len(SLOT)
            number = rng.choice([0, 1, 1, 2, 3, 5])
            slot = case.literal().index(SLOT)
            cuts = [rng.randrange(1, length) for _ in range(number)] if length > 1 else []
            case.cuts = [c if c <= slot else c + len(SLOT) for c in cuts]
            case.ident = f"{seed}:{len(cases)}"
            cases.append(case)
            if len(cases) == count:
                break
    return cases


# -- compiling and rendering -------------------------------------------------------------


@dataclass
class Compiled:
    case: Case
    function: Callable[[Any], Any] | None = None
    error: str = ""  # the refusal (a located SyntaxError)
    crash: str = ""  # anything else: a drift


def compile_case(case: Case) -> Compiled:
    from ptl_wsgi.compiler import compile_ptl

    try:
        code = compile_ptl(case.source(), f"<fuzz {case.ident}>")
    except SyntaxError as error:
        if error.lineno is None:
            return Compiled(case, crash=f"unlocated SyntaxError: {error}")
        try:  # a refusal of contextual escaping, not a template the grammar got wrong
            compile_ptl(case.source().replace(":\n", ":\n    __ptl_contextual__ = False\n", 1), "")
        except SyntaxError as plain:
            raise AssertionError(
                f"the fuzzer wrote invalid PTL: {plain}\n{case.source()}"
            ) from plain
        return Compiled(case, error=f"{error.lineno}:{error.offset}: {error.msg}")
    except Exception as error:  # a crash of the compiler is a finding
        return Compiled(case, crash=f"{type(error).__name__}: {error}")
    module = types.ModuleType("fuzz_case")
    exec(code, module.__dict__)
    return Compiled(case, module.f)


def runtime_function(case: Case, kind: str) -> Callable[[Any], Any]:
    """The run-time path: the literal as a format string, formatted by htmltext."""
    fmt = case.format_string(kind)
    if kind == "percent":
        return lambda value: htmltext(fmt) % (value,)
    return lambda value: htmltext(fmt).format(value)


@dataclass
class Render:
    """One value rendered by one case: what goes into one frame."""

    case: Case
    value: Any
    output: str = ""
    error: str = ""  # the template raised
    markup: bool = False


def render(case: Case, function: Callable[[Any], Any], value: Any) -> Render:
    try:
        output = str(function(value))
    except Exception as error:
        return Render(case, value, error=f"{type(error).__name__}: {error}")
    return Render(case, value, output)


# -- the browser -------------------------------------------------------------------------

PAGE_URL = "http://127.0.0.1:9/ptl-contexts-fuzz"

# In every frame, before its scripts: the hook hostile values call, recorded in the
# case's own frame (the top frame's child) where its nested frames can reach it.
FUZZ_HOOKS = """
(() => {
  const record = (what) => {
    let w = window;
    try { while (w.parent !== w.top && w.parent !== w) w = w.parent; } catch (e) { w = window; }
    try { (w.__ptl_fired = w.__ptl_fired || []).push(String(what)); }
    catch (e) { (window.__ptl_fired = window.__ptl_fired || []).push(String(what)); }
  };
  window.__ptl_hit = record;
  window.__ptl_record = record;
})();
"""

# After load, in the top frame: provoke every frame's handlers (framework attributes
# evaluated as their framework would), then read each case back.
PROVOKE = """
async (reads) => {
  const EVENTS = ["click", "dblclick", "mouseover", "mouseenter", "mousemove", "mousedown",
    "mouseup", "mouseout", "pointerdown", "pointerup", "pointerover", "focus", "focusin",
    "blur", "keydown", "keyup", "input", "change", "submit", "load", "error", "toggle",
    "begin", "end", "animationstart", "animationend", "transitionend", "scroll", "wheel",
    "copy", "paste", "drag", "drop", "play", "message", "beforeinput", "select", "invalid",
    "after-request", "before-request", "htmx:afterRequest"];
  const SCRIPT_SCHEMES = ["javascript:", "vbscript:"];
  const URL_ATTRIBUTES = ["href", "xlink:href", "src", "action", "formaction", "data",
                          "poster", "background", "cite", "ping", "data-url"];
  const FRAMEWORK = new RegExp("^(?:data-)?(?:[@:]|hx-on|v-|ng[-:_]|x-(?:data|init|show|bind"
    + "|on|text|html|model|modelable|for|effect|if|id)(?:$|[:.])|bind$)", "i");
  const record = (win, what) => { try { win.__ptl_record(what); } catch (e) {} };
  const provoke = (win, root) => {
    let doc;
    try { doc = win.document; } catch (e) { return; }
    for (const element of doc.querySelectorAll("*")) {
      for (const type of EVENTS) {
        try { element.dispatchEvent(new win.Event(type, {cancelable: true})); } catch (e) {}
      }
      try { if (element.focus) element.focus(); } catch (e) {}
      for (const attr of Array.from(element.attributes)) {
        if (FRAMEWORK.test(attr.name)) {
          let run = null;
          try { run = new win.Function("return (" + attr.value + "\\n)"); } catch (e) {
            try { run = new win.Function(attr.value); } catch (e2) {}
          }
          if (run) { try { run.call(element); } catch (e) {} }
        }
      }
      for (const name of URL_ATTRIBUTES) {
        const value = name === "xlink:href"
          ? element.getAttributeNS("http://www.w3.org/1999/xlink", "href")
          : element.getAttribute(name);
        if (value === null) continue;
        let protocol;
        try { protocol = new URL(value, doc.baseURI).protocol; } catch (e) { continue; }
        if (SCRIPT_SCHEMES.includes(protocol)) {
          record(win, "script URL in <" + element.localName + " " + name + ">");
          if (element.click) { try { element.click(); } catch (e) {} }
        }
      }
      if (element.localName === "iframe") {
        try { provoke(element.contentWindow, root); } catch (e) {}
      }
    }
  };
  const frames = Array.from(document.querySelectorAll("iframe.ptl-case"));
  for (const frame of frames) provoke(frame.contentWindow, frame.contentWindow);
  await new Promise((resolve) => setTimeout(resolve, 30));
  // An SVG link's href as animated (what a click follows), once animations have run.
  const animated = (win) => {
    let doc;
    try { doc = win.document; } catch (e) { return; }
    for (const element of doc.querySelectorAll("a, iframe")) {
      if (element.localName === "iframe") { try { animated(element.contentWindow); } catch (e) {} }
      const value = element.href && element.href.animVal;
      if (typeof value !== "string") continue;
      try {
        if (SCRIPT_SCHEMES.includes(new URL(value, doc.baseURI).protocol)) {
          record(win, "script URL in an animated <a href>");
        }
      } catch (e) {}
    }
  };
  for (const frame of frames) animated(frame.contentWindow);
  return frames.map((frame, i) => {
    const win = frame.contentWindow;
    const result = {fired: [], hooks: [], end: false, read: null, error: null};
    try {
      result.fired = Array.from(win.__ptl_fired || []);
      result.hooks = Array.from(win.__ptl_hits || []);
      result.end = win.__ptl_end === 1;
      const nested = (w) => {
        for (const f of w.document.querySelectorAll("iframe")) {
          try {
            result.hooks.push(...Array.from(f.contentWindow.__ptl_hits || []));
            nested(f.contentWindow);
          } catch (e) {}
        }
      };
      nested(win);
      result.read = win.eval("(" + reads[i] + ")");
      if (result.read !== null && typeof result.read === "object") {
        result.read = JSON.parse(JSON.stringify(result.read));
      }
    } catch (e) { result.error = String(e); }
    return result;
  });
}
"""

HEAD = (
    "<!doctype html><meta charset=utf-8><script>window.__ptl_got = [];"
    "window.__ptl_put = function (x) { __ptl_got.push(x); };"
    "window.__ptl_value = {value};</script>"
)
TAIL = "<p id=ptl-end></p><script>window.__ptl_end = 1;</script>"


def frame_document(item: Render) -> str:
    value = json.dumps("" if item.markup else str(item.value))
    value = value.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return HEAD.replace("{value}", value) + item.output + TAIL


def _srcdoc(document: str) -> str:
    return html.escape(document, quote=True).replace("\r", "&#13;")


class FuzzBrowser:
    """Headless Chromium with the XSS hooks of tests/support/browser.py and the fuzzer's own."""

    def __init__(self) -> None:
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        try:
            self._browser = self._playwright.chromium.launch(
                executable_path=chromium_path(),
                # Nothing leaves the machine and no page waits for the network: every
                # host but the harness's fails to resolve, and its port 9 refuses.
                args=["--no-sandbox", "--disable-gpu", "--disable-quic",
                      "--disable-background-networking", "--disable-component-update",
                      "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"],
            )  # fmt: skip
            self._context = self._browser.new_context(java_script_enabled=True)
            self._context.add_init_script(HOOKS)
            self._context.add_init_script(FUZZ_HOOKS)
            self._context.set_default_timeout(60_000)
            self._page = self._context.new_page()
        except BaseException:
            self._playwright.stop()
            raise
        self._body = b""
        self._dialogs: list[str] = []
        self._page.on("dialog", self._on_dialog)
        self._page.route(PAGE_URL, self._route)

    def _on_dialog(self, dialog: Any) -> None:
        self._dialogs.append(f"real {dialog.type} dialog: {dialog.message}")
        dialog.dismiss()

    def _route(self, route: Any) -> None:
        route.fulfill(status=200, body=self._body, content_type="text/html; charset=utf-8")

    def run(self, items: list[Render]) -> tuple[list[dict[str, Any]], list[str]]:
        """Load *items*, one frame each; their results, and hits no frame owns."""
        frames = "".join(
            f'<iframe class=ptl-case srcdoc="{_srcdoc(frame_document(item))}"></iframe>'
            for item in items
        )
        self._body = f"<!doctype html><html><body>{frames}</body></html>".encode()
        self._dialogs.clear()
        page = self._page
        page.goto(PAGE_URL, wait_until="load")
        reads = [item.case.recipe.read for item in items]
        results: list[dict[str, Any]] = page.evaluate(PROVOKE, reads)
        stray = list(self._dialogs)
        stray += [
            f"frame {frame.url[:60]}: {hit}"
            for frame in page.frames
            if frame.url not in (PAGE_URL, "about:srcdoc", "about:blank")
            for hit in _frame_hits(frame)
        ]
        top = page.evaluate("() => [...(window.__ptl_hits || []), ...(window.__ptl_fired || [])]")
        stray += [f"top frame: {hit}" for hit in top]
        if page.url != PAGE_URL:
            stray.append(f"the page navigated to {page.url}")
        return results, stray

    def close(self) -> None:
        try:
            self._browser.close()
        finally:
            self._playwright.stop()

    def __enter__(self) -> FuzzBrowser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _frame_hits(frame: Any) -> list[str]:
    try:
        return list(frame.evaluate("() => [...(window.__ptl_hits || [])]"))
    except Exception:
        return []


# -- the oracle --------------------------------------------------------------------------


def _newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


_CSS_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6})[ \t\n]?|\\(.)", re.DOTALL)


def css_unescape(text: str) -> str:
    return _CSS_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else m.group(2), text)


def _middle(read: Any, prefix: str, suffix: str) -> str | None:
    if not isinstance(read, str) or not read.startswith(prefix) or not read.endswith(suffix):
        return None
    return read[len(prefix) : len(read) - len(suffix)]


def expected_ok(item: Render, result: dict[str, Any]) -> str | None:
    """None when the value arrived as it must, else what went wrong."""
    recipe, value, read = item.case.recipe, item.value, result["read"]
    text = str(value)
    check = recipe.check
    if item.markup:
        return None
    if check == "text":
        want = _newlines(recipe.prefix + text + recipe.suffix)
        return None if isinstance(read, str) and _newlines(read) == want else f"read {read!r}"
    if check == "text_lstrip":  # a document's leading spaces are not text
        want = _newlines(text).lstrip(" \t\n\f")
        return None if isinstance(read, str) and _newlines(read) == want else f"read {read!r}"
    if check == "rawtext":
        got = html.unescape(read) if isinstance(read, str) else read
        want = html.unescape(recipe.prefix) + text + html.unescape(recipe.suffix)
        ok = isinstance(got, str) and _newlines(got) == _newlines(want)
        return None if ok else f"read {read!r}"
    if check in ("got", "got_str"):
        want = recipe.prefix + text + recipe.suffix
        return None if read and all(r == want for r in read) else f"stored {read!r}"
    if check == "got_value":
        number = isinstance(value, (int, float)) and item.case.style != "nested"
        want_value = value if number else text  # (a nested f-string makes a str)
        return None if read and all(r == want_value for r in read) else f"stored {read!r}"
    if check == "none":
        return None
    if check == "attr_names":
        names = sorted(set(text.lower().split()))
        ok = isinstance(read, list) and sorted(read) in (names, ["zptlz"])
        return None if ok else f"attributes {read!r}"
    if check == "got_any":
        return None if read else "stored nothing"
    if check == "got_true":
        return None if read and all(r is True for r in read) else f"stored {read!r}"
    if check == "got_ok":
        return None if read == ["ok"] else f"stored {read!r}"
    if check == "canary_color":
        return None if read == "rgb(1, 2, 3)" else f"color {read!r}"
    if check == "comment":
        middle = _middle(read, recipe.prefix, recipe.suffix)
        ok = middle is not None and html.unescape(middle) == text
        return None if ok else f"comment {read!r}"
    if check == "css":
        middle = _middle(read, recipe.prefix, recipe.suffix)
        return None if middle in (text, UNSAFE_CSS) else f"css {read!r}"
    if check == "css_string":
        middle = _middle(read, recipe.prefix, recipe.suffix)
        return None if middle is not None and css_unescape(middle) == text else f"css {read!r}"
    if check == "url":
        middle = _middle(read, recipe.prefix, recipe.suffix)
        if middle is None:
            return f"url {read!r}"
        if middle == UNSAFE_URL or unquote(middle) in (text, unquote(text)):
            return None
        if item.case.style.startswith("halves") and middle.startswith(UNSAFE_URL):
            return None  # (the first half refused alone)
        if unquote(middle) in (text.strip(), re.sub("[\t\n\r]", "", text)):
            return None
        return f"url {read!r}"
    if check == "json":
        try:
            parsed = json.loads(read)
        except (TypeError, ValueError) as error:
            return f"not JSON ({error}): {read!r}"
        return None if parsed == {"k": text} else f"JSON {parsed!r}"
    raise AssertionError(check)


def html5lib_ok(item: Render) -> str | None:
    """html5lib's view: the value is the one text node or attribute value of its element."""
    spec = item.case.recipe.html5
    if spec is None or item.markup or not item.output:
        return None
    import html5lib

    ident, attr, prefix, suffix = spec
    tree = html5lib.parse(frame_document(item), namespaceHTMLElements=False)
    found = [e for e in tree.iter() if e.get("id") == ident]
    if len(found) != 1:
        return f"html5lib: {len(found)} elements with id={ident}"
    element = found[0]
    want = _newlines(prefix + str(item.value) + suffix)
    if attr is None:
        if len(element) or _newlines(element.text or "") != want:
            kids = [child.tag for child in element]
            return f"html5lib: text {element.text!r}, children {kids}"
        return None
    got = element.get(attr)
    if got is None or _newlines(got) != want:
        return f"html5lib: {attr}={got!r}"
    return None


def engine_ok(case: Case) -> str | None:
    """The engine's context for the value: the same for the pieces as for the whole."""
    before, _ = case.segments()
    ctx = htmlcontext.TEXT
    try:
        whole = htmlcontext.escaper_for(htmlcontext.advance(ctx, "".join(before)))
    except htmlcontext.ContextError:
        whole = "refused"
    try:
        for piece in before:
            ctx = htmlcontext.advance(ctx, piece)
        pieces = htmlcontext.escaper_for(ctx)
    except htmlcontext.ContextError:
        pieces = "refused"
    if whole != pieces:
        return f"engine: escaper {whole} for the whole literal, {pieces} for its pieces"
    if case.recipe.html5 and whole not in (None, "text_u", "text_u0"):
        return f"engine: escaper {whole} where html5lib sees a text node or attribute value"
    return None


def engine_view(case: Case) -> str:
    before, _ = case.segments()
    try:
        ctx = htmlcontext.advance(htmlcontext.TEXT, "".join(before))
        return f"{htmlcontext.describe(ctx)}: escaper {htmlcontext.escaper_for(ctx)}"
    except htmlcontext.ContextError as error:
        return f"refused ({error})"


@dataclass
class Finding:
    item: Render
    problems: list[str]
    known: str = ""

    def describe(self) -> str:
        case = self.item.case
        lines = [
            f"case {case.ident} ({case.recipe.name}, style {case.style}), "
            f"value {self.item.value!r}: {'; '.join(self.problems)}",
            f"  engine: {engine_view(case)}",
        ]
        if self.known:
            lines.append(f"  known: {self.known}")
        if case.runtime:
            fmt = case.format_string(case.runtime)
            call = " % (v,)" if case.runtime == "percent" else ".format(v)"
            lines.append(f"  run time: htmltext({fmt!r}){call}")
        else:
            lines.append("  template:")
            lines += ["    " + line for line in case.source().splitlines()]
        if self.item.output:
            lines.append(f"  output: {self.item.output!r}")
        return "\n".join(lines)


def known_finding(item: Render, problems: list[str]) -> str:
    """Which open finding a failure is (by its markup), or "": reported apart, not failed on.

    The findings being fixed elsewhere (issue #26) and the drifts this fuzzer found,
    each an expected failure in tests/browser/test_contexts_fuzz.py until it is fixed.
    """
    case = item.case
    name, text = case.recipe.name, case.literal()
    before_value = "".join(case.segments()[0]).rstrip(" \t\n\f\r")
    if before_value.endswith("=") and re.search(r'=[ \t\n\f\r]*""[^ \t\n\f\r>]', item.output):
        return "DRIFT (test_regressions): an empty value at the start of an unquoted attribute"
    if name == "srcset" and case.style.startswith("halves"):
        return "DRIFT (test_regressions): a srcset's second value loses its spaces"
    if name == "animation values scheme completed by a literal":
        return "DRIFT (test_regressions): values spell a scheme in an SVG animation values list"
    if name.startswith("scheme") and ("branch" in case.style or "if " in case.source()):
        return "DRIFT (test_regressions): values spell a URL scheme through an if"
    if name == "json script":
        return "JSON script types: the JS string escaper's \\x22 is not JSON"
    if (
        "CDATA" in name
        or "foreignObject script" in name
        or "mtext script" in name
        or ("integration point" in name)
    ):
        return "SVG CDATA / foreignObject / mtext scripts"
    in_js = case.recipe.context.startswith(("JS", "event handler"))
    for match in _PAREN_SLASH.finditer(text) if in_js else ():
        # the ambiguity is checked to the end of the line (or script), within one piece
        ends = [i for i in (text.find("\n", match.end()), text.find("</", match.end())) if i >= 0]
        line_end = min(ends, default=len(text))
        split = any(match.start() < cut <= line_end for cut in case.cuts)
        if match.group(1) or split:
            return "a regular expression after ) split by a comment or literal boundary"
    return ""


# ")" then "/", maybe a comment between: a regular expression or a division.
_PAREN_SLASH = re.compile(r"\)\s*(/\*.*?\*/\s*|//[^\n]*\n\s*)?/(?![/*])", re.DOTALL)


@dataclass
class Stats:
    cases: int = 0
    compiled: int = 0
    refused: int = 0
    rendered: int = 0
    render_errors: int = 0
    frames: int = 0
    contexts: dict[str, int] = field(default_factory=dict)
    refusals: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        return (
            f"{self.cases} cases: {self.compiled} compiled, {self.refused} refused; "
            f"{self.rendered} renders ({self.render_errors} raised), {self.frames} frames; "
            f"{len(self.contexts)} contexts"
        )


def check_items(
    browser: FuzzBrowser, items: list[Render], batch: int = 100
) -> tuple[list[Finding], list[str]]:
    """Run *items* in the browser, *batch* frames a page; the findings, and stray hits."""
    findings: list[Finding] = []
    strays: list[str] = []
    for start in range(0, len(items), batch):
        chunk = items[start : start + batch]
        results, stray = browser.run(chunk)
        if stray and len(chunk) > 1:  # a hit no frame owns: find whose, one frame a page
            for item in chunk:
                sub_findings, sub_stray = check_items(browser, [item], batch=1)
                findings += sub_findings
                strays += sub_stray
            continue
        strays += stray
        for item, result in zip(chunk, results, strict=True):
            finding = judge(item, result, [f"EXECUTED outside its frame: {stray}"] if stray else [])
            if finding:
                findings.append(finding)
    return findings, strays


def judge(item: Render, result: dict[str, Any], problems: list[str]) -> Finding | None:
    """The oracle's verdict on one render: None, or a finding with what went wrong."""
    hits = result["fired"] + result["hooks"]
    if hits:
        problems.append(f"EXECUTED {hits}")
    if result["error"]:
        problems.append(f"read failed: {result['error']}")
    elif not result["end"]:
        problems.append("the canary after the template did not run")
    else:
        wrong = expected_ok(item, result)
        if wrong:
            problems.append(f"mangled: {wrong}")
    parsed = html5lib_ok(item)
    if parsed:
        problems.append(parsed)
    if not problems:
        return None
    finding = Finding(item, problems)
    finding.known = known_finding(item, problems)
    return finding


def values_for(case: Case, rng: random.Random, count: int | None) -> list[Any]:
    values: list[Any] = list(SENTINELS) if count is None else rng.sample(SENTINELS, count)
    if case.recipe.check == "url" and rng.random() < 0.5:
        values.append(htmltext("javascript:__ptl_hit(99)"))
    return values


def fuzz(
    browser: FuzzBrowser,
    seeds: list[int],
    cases_per_seed: int,
    values_per_case: int | None,
    runtime: str = "",
    stats: Stats | None = None,
) -> list[Finding]:
    """Generate, compile (or format at run time), render and check; the findings."""
    stats = stats if stats is not None else Stats()
    findings: list[Finding] = []
    items: list[Render] = []
    for seed in seeds:
        rng = random.Random(seed * 7919 + 1)
        for case in generate(seed, cases_per_seed):
            stats.cases += 1
            stats.contexts[case.recipe.context] = stats.contexts.get(case.recipe.context, 0) + 1
            if runtime:  # one format string: no cuts, no style
                case.cuts, case.style, case.runtime = [], runtime, runtime
                function: Callable[[Any], Any] = runtime_function(case, runtime)
            else:
                drift = engine_ok(case)
                if drift:
                    finding = Finding(Render(case, ""), [drift])
                    finding.known = known_finding(finding.item, finding.problems)
                    findings.append(finding)
                compiled = compile_case(case)
                if compiled.crash:
                    findings.append(Finding(Render(case, ""), [f"compiler: {compiled.crash}"]))
                    continue
                if compiled.function is None:
                    stats.refused += 1
                    reason = re.sub(r"^\d+:\d+: ", "", compiled.error)[:70]
                    stats.refusals[reason] = stats.refusals.get(reason, 0) + 1
                    continue
                function = compiled.function
            stats.compiled += 1
            for value in values_for(case, rng, values_per_case):
                item = render(case, function, value)
                item.markup = isinstance(value, htmltext)
                stats.rendered += 1
                if item.error:
                    stats.render_errors += 1
                    continue
                items.append(item)
    stats.frames += len(items)
    found, _ = check_items(browser, items)
    return findings + found


# -- shrinking ---------------------------------------------------------------------------


def _still_fails(browser: FuzzBrowser, case: Case, value: Any, runtime: str) -> Finding | None:
    if runtime:
        function: Callable[[Any], Any] = runtime_function(case, runtime)
    else:
        compiled = compile_case(case)
        if compiled.function is None:
            return None
        function = compiled.function
    item = render(case, function, value)
    item.markup = isinstance(value, htmltext)
    if item.error:
        return None
    findings, _ = check_items(browser, [item], batch=1)
    executed = [f for f in findings if any("EXECUTED" in p for p in f.problems)]
    return executed[0] if executed else (findings[0] if findings else None)


def without(case: Case, part: str, i: int) -> Case:
    """*case* without its *part* decoration *i*; cuts after it move, cuts in it go."""
    pieces = getattr(case, part)
    start = (
        len("".join(case.prefix[:i]))
        if part == "prefix"
        else (len(case.literal()) - len("".join(case.suffix[i:])))
    )
    size = len(pieces[i])
    cuts = [c if c <= start else c - size for c in case.cuts if not start < c < start + size]
    return replace(case, **{part: pieces[:i] + pieces[i + 1 :]}, cuts=cuts)


def shrink(browser: FuzzBrowser, finding: Finding, runtime: str = "", budget: int = 40) -> Finding:
    """A smaller case that fails the same way: fewer decorations, cuts, a plain style."""
    best = finding
    executed = any("EXECUTED" in p for p in finding.problems)
    tries = 0

    def candidates(case: Case) -> Iterator[Case]:
        for i in range(len(case.prefix)):
            yield without(case, "prefix", i)
        for i in range(len(case.suffix)):
            yield without(case, "suffix", i)
        for i in range(len(case.cuts)):
            yield replace(case, cuts=case.cuts[:i] + case.cuts[i + 1 :])
        if case.style != "statements" and not case.runtime:
            yield replace(case, style="statements")

    progress = True
    while progress and tries < budget:
        progress = False
        for candidate in candidates(best.item.case):
            tries += 1
            again = _still_fails(browser, candidate, best.item.value, runtime)
            if again and (not executed or any("EXECUTED" in p for p in again.problems)):
                again.known = known_finding(again.item, again.problems)
                best = again
                progress = True
                break
            if tries >= budget:
                break
    return best


# -- the long run ------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Fuzz contextual escaping against headless Chromium (make fuzz-contexts)."
    )
    parser.add_argument("--minutes", type=float, default=10.0, help="stop after this long")
    parser.add_argument("--seeds", type=int, nargs="*", help="these seeds (default: random)")
    parser.add_argument("--cases", type=int, default=100, help="cases per seed")
    parser.add_argument(
        "--values", type=int, default=12, help="sentinels per case, drawn at random (0: all)"
    )
    parser.add_argument(
        "--runtime",
        choices=["", "percent", "format"],
        default="",
        help="the run-time path (htmltext %% or .format) instead of compiling",
    )
    parser.add_argument("--show-known", action="store_true", help="print known findings too")
    args = parser.parse_args(argv)
    from browser import unavailable

    why = unavailable()
    if why:
        print(f"fuzz-contexts: cannot run: {why}")
        return 2
    deadline = time.monotonic() + args.minutes * 60
    seeds = list(args.seeds) if args.seeds else None
    stats, new, known = Stats(), [], []
    seen: set[tuple[str, str]] = set()
    with FuzzBrowser() as browser:
        while time.monotonic() < deadline:
            batch = [seeds.pop(0)] if seeds else [random.SystemRandom().randrange(10**9)]
            values = args.values or None
            for finding in fuzz(browser, batch, args.cases, values, args.runtime, stats):
                key = (finding.item.case.recipe.name, finding.known or finding.problems[0][:40])
                if key in seen:
                    continue
                seen.add(key)
                if finding.known:
                    known.append(finding)
                    continue
                finding = shrink(browser, finding, args.runtime)
                new.append(finding)
                print("\n" + finding.describe(), flush=True)
            print(f"seed {batch[0]}: {stats.summary()}", flush=True)
            if seeds == []:
                break
    print(f"\n{stats.summary()}")
    print("contexts:", ", ".join(f"{k} {v}" for k, v in sorted(stats.contexts.items())))
    print(f"refusals: {sum(stats.refusals.values())}")
    for reason, count in sorted(stats.refusals.items(), key=lambda kv: -kv[1])[:10]:
        print(f"  {count:5}  {reason}")
    print(f"{len(new)} new findings, {len(known)} known")
    if args.show_known:
        for finding in known:
            print("\n" + finding.describe())
    return 1 if new else 0


if __name__ == "__main__":
    raise SystemExit(main())
