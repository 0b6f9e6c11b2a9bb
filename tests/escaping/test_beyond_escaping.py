"""safe_url, attrs, json_script and the CSP nonce: the helpers for what escaping cannot cover."""

from __future__ import annotations

import contextvars
import doctest
import html
import json
import re
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markupsafe import Markup

from ptl_wsgi.beyond_escaping import UNSAFE_URL, attrs, is_safe_url, json_script, safe_url
from ptl_wsgi.compiler import compile_ptl
from ptl_wsgi.csp import content_security_policy, csp_nonce, new_nonce, nonce_scope
from ptl_wsgi.escaping.rules import attribute_kind
from ptl_wsgi.html import htmltext

# -- safe_url ------------------------------------------------------------------------

SCRIPT_URLS = [
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "JAVASCRIPT:alert(1)",
    "java\tscript:alert(1)",
    "java\nscript:alert(1)",
    "java\rscript:alert(1)",
    "jav\t\n\rascript:alert(1)",
    " javascript:alert(1)",
    "\t\n javascript:alert(1)",
    "\x00javascript:alert(1)",
    "\x01\x02\x1fjavascript:alert(1)",
    "\x7fjavascript:alert(1)",
    "java\x00script:alert(1)",
    "java\x0bscript:alert(1)",
    "javascript\x00:alert(1)",
    "javascript :alert(1)",
    "\ufeffjavascript:alert(1)",
    "java\u200bscript:alert(1)",
    "\u00adjavascript:alert(1)",
    "javascript&colon;alert(1)",
    "javascript&#58;alert(1)",
    "javascript&#x3a;alert(1)",
    "javascript&#0000058alert(1)",
    "&#106;avascript:alert(1)",
    "&#106avascript:alert(1)",
    "&#0000106&#0000097&#0000118&#0000097script:alert(1)",
    "&#x6A;avascript:alert(1)",
    "&#X6a;avascript:alert(1)",
    "&#x6A&#x61&#x76&#x61&#x73&#x63&#x72&#x69&#x70&#x74&#x3A;alert(1)",
    "&amp;#106;avascript:alert(1)",
    "&amp;amp;#x6A;avascript:alert(1)",
    "&Tab;javascript:alert(1)",
    "java&Tab;script:alert(1)",
    "java&NewLine;script:alert(1)",
    "&#9;javascript:alert(1)",
    "javascript:/*--></title></style></textarea></script><svg/onload=alert(1)>",
    "vbscript:msgbox(1)",
    "VBScript:msgbox(1)",
    "livescript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    "DATA:text/html,<script>alert(1)</script>",
    " data:text/html,x",
    "data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+",
    "data:application/javascript,alert(1)",
    "blob:https://example.com/uuid",
    "file:///etc/passwd",
    "ftp://example.com/",
    "ms-its:mhtml:file://C:/x.mht!https://x/y",
    "jar:https://example.com/a.jar!/x",
    "\uff4aavascript:alert(1)",  # fullwidth j: a path to browsers, refused all the same
    "java\ufffdscript:alert(1)",
    "%6Aavascript:alert(1)",  # also a path, since "%" cannot be in a scheme
    "x-evil:whatever",
]

KEPT_URLS = [
    "https://example.com/",
    "HTTPS://EXAMPLE.COM/path?q=1#f",
    "http://example.com/a b",
    "mailto:someone@example.com",
    "tel:+1-555-0100",
    "/absolute/path",
    "relative/path.html",
    "../up",
    "./here:there",
    "?q=javascript:alert(1)",
    "#javascript:alert(1)",
    "/path/javascript:alert(1)",
    "a/b?c=d:e",
    "//example.com/protocol-relative",
    "\\\\example.com\\backslashes",
    "/\\example.com",
    "",
    "https://example.com/?a=<b>&c='d'\"e\"",
    "javascript%3Aalert(1)",
]


@pytest.mark.parametrize("url", SCRIPT_URLS)
def test_safe_url_refuses_script_schemes_after_normalisation(url: str) -> None:
    assert safe_url(url) == UNSAFE_URL
    assert safe_url(url, allow_data_images=True) == UNSAFE_URL
    assert not is_safe_url(url)
    assert type(safe_url(url)) is htmltext


@pytest.mark.parametrize("url", KEPT_URLS)
def test_safe_url_keeps_allowed_and_relative_urls_escaped(url: str) -> None:
    assert is_safe_url(url)
    result = safe_url(url)
    assert type(result) is htmltext
    assert html.unescape(result) == url
    assert not set(result) & set("<>\"'")


def test_data_images_only_when_asked() -> None:
    png = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    assert safe_url(png) == UNSAFE_URL
    assert safe_url(png, allow_data_images=True) == png
    assert safe_url("DATA:IMAGE/GIF;BASE64,R0lGODlh", allow_data_images=True) != UNSAFE_URL
    assert safe_url("data:image/jpeg;base64,/9j/\n4AAQ", allow_data_images=True) != UNSAFE_URL
    for refused in (
        "data:image/svg+xml;base64,PHN2Zz4=",  # SVG documents may carry script
        "data:image/png,rawbytes",  # not base64
        "data:image/png;base64,abc<script>",
        "data:text/html;base64,PHNjcmlwdD4=",
        "data:;base64,image/png",
    ):
        assert safe_url(refused, allow_data_images=True) == UNSAFE_URL, refused


def test_schemes_allow_list() -> None:
    assert safe_url("ftp://example.com/f", schemes=["ftp"]) == "ftp://example.com/f"
    assert safe_url("FTP://example.com/f", schemes=("ftp:",)) == "FTP://example.com/f"
    assert safe_url("https://example.com/", schemes=["ftp"]) == UNSAFE_URL
    assert safe_url("/relative", schemes=()) == "/relative"
    for forbidden in ("javascript", "JavaScript:", "vbscript", "data", "blob"):
        with pytest.raises(ValueError, match="run script"):
            safe_url("https://example.com/", schemes=["https", forbidden])


def test_markup_is_decoded_once_like_a_browser_would() -> None:
    # In markup "&amp;" is a literal "&": the URL the browser sees is "?a=1&b=2".
    assert safe_url(htmltext("/x?a=1&amp;b=2")) == "/x?a=1&amp;b=2"
    assert safe_url(Markup("&#106;avascript:alert(1)")) == UNSAFE_URL
    assert safe_url(htmltext("https://example.com/")) == "https://example.com/"


def test_safe_url_accepts_non_str_values() -> None:
    class Url:
        def __str__(self) -> str:
            return "javascript:alert(1)"

    assert safe_url(Url()) == UNSAFE_URL
    assert safe_url(42) == "42"


@given(st.text())
def test_safe_url_output_is_always_escaped_and_never_a_script(url: str) -> None:
    result = safe_url(url)
    assert not set(result) & set("<>\"'")
    seen = re.sub("[\x00-\x20\x7f]", "", html.unescape(html.unescape(result))).lower()
    assert not seen.startswith(("javascript:", "vbscript:", "data:"))


@given(st.sampled_from(["javascript:", "vbscript:", "data:text/html,"]), st.data())
def test_safe_url_sees_through_generated_obfuscation(scheme: str, data: st.DataObject) -> None:
    def obfuscate(char: str) -> str:
        forms = [char, char.upper(), f"&#{ord(char)};", f"&#x{ord(char):x};", f"&#{ord(char)}"]
        form = data.draw(st.sampled_from(forms))
        noise = data.draw(st.sampled_from(["", "\t", "\n", "\r", "\x00", "&Tab;", "&NewLine;"]))
        return noise + form

    prefix = data.draw(st.sampled_from(["", " ", "\x01", "\x1f ", "\ufeff"]))
    url = prefix + "".join(obfuscate(c) for c in scheme) + "alert(1)"
    assert safe_url(url) == UNSAFE_URL, url


# -- attrs ----------------------------------------------------------------------------


def test_attrs_renders_escaped_pairs_in_order() -> None:
    result = attrs({"class": 'a"b', "data-id": 7, "title": "<x>&'"})
    assert result == ' class="a&quot;b" data-id="7" title="&lt;x&gt;&amp;&#x27;"'
    assert type(result) is htmltext
    assert attrs({}) == ""


def test_attrs_booleans_and_none() -> None:
    assert attrs({"disabled": True, "hidden": False, "title": None, "value": 0}) == (
        ' disabled value="0"'
    )
    assert attrs({"value": ""}) == ' value=""'


def test_attrs_trusts_markup_values() -> None:
    assert attrs({"title": htmltext("a &amp; b")}) == ' title="a &amp; b"'
    assert attrs({"title": Markup("&lt;")}) == ' title="&lt;"'


@pytest.mark.parametrize(
    "name",
    [
        "", "a b", "a\tb", "a\nb", 'a"', "a'", "a>", "a/b", "a=b", "<a", "a`", "\x00",
        "a\x7f", "a\x85", "x\ufdd0", "x\uffff", "x\U0010ffff", "\u00a0\x01",
    ],
)  # fmt: skip
def test_attrs_rejects_invalid_names(name: str) -> None:
    with pytest.raises(ValueError, match="invalid attribute name"):
        attrs({name: "v"})


def test_attrs_rejects_non_str_names() -> None:
    with pytest.raises(ValueError, match="invalid attribute name"):
        attrs({1: "v"})  # type: ignore[dict-item]


@pytest.mark.parametrize(
    "name", ["data-x", "aria-label", "xlink:href", "xml:lang", "_x", "x.y", "viewBox", "é", "🙂"]
)
def test_attrs_accepts_valid_names(name: str) -> None:
    assert attrs({name: "v"}).startswith(f" {name}=")


@pytest.mark.parametrize(
    "name", ["onclick", "ONLOAD", "OnMouseOver", "onfocus", "on", "onbegin", "srcdoc", "SrcDoc"]
)
def test_attrs_refuses_script_attributes_unless_markup_or_allowed(name: str) -> None:
    for value in ("alert(1)", 1, True, b"x"):
        with pytest.raises(ValueError, match="is script"):
            attrs({name: value})
    # Markup is the developer's word that the script is theirs (an [html] literal is markup).
    assert attrs({name: htmltext("f('a')")}) == f" {name}=\"f('a')\""
    assert attrs({name: Markup("f(1)")}) == f' {name}="f(1)"'
    assert attrs({name: "f('<x>')"}, allow_events=True) == f' {name}="f(&#x27;&lt;x&gt;&#x27;)"'


def test_attrs_rejects_duplicate_names() -> None:
    with pytest.raises(ValueError, match="twice"):
        attrs({"class": "a", "CLASS": "b"})


@pytest.mark.parametrize(
    "name",
    [
        "href", "HREF", "src", "action", "formaction", "xlink:href", "poster", "data", "to",
        "ping", "srcset", "imagesrcset", "cite", "background", "codebase", "manifest",
        "longdesc", "usemap", "archive", "itemtype", "attributionsrc", "XLink:HREF", "foo:href",
    ],
)  # fmt: skip
def test_attrs_sends_url_attributes_through_safe_url(name: str) -> None:
    assert attrs({name: "java\tscript:alert(1)"}) == f' {name}="{UNSAFE_URL}"'
    assert attrs({name: htmltext("&#106;avascript:alert(1)")}) == f' {name}="{UNSAFE_URL}"'
    assert attrs({name: "/a?b=1&c=2"}) == f' {name}="/a?b=1&amp;c=2"'


def test_attrs_checks_each_svg_animation_value() -> None:
    assert attrs({"values": "https://a/;javascript:alert(1)"}) == f' values="{UNSAFE_URL}"'
    assert attrs({"values": "0;10;0"}) == ' values="0;10;0"'


def test_attrs_output_parses_back_to_the_mapping() -> None:
    mapping = {"class": "a b", "title": "\"'<>&", "data-x": "</div><script>", "id": "x"}
    parsed = _parse_attrs(f"<div{attrs(mapping)}>")
    assert parsed == list(mapping.items())


@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9\-]{0,8}", fullmatch=True).filter(
            lambda n: attribute_kind(n) == "plain"
        ),
        st.text(),
        max_size=5,
    )
)
def test_attrs_round_trip(mapping: dict[str, str]) -> None:
    assert _parse_attrs(f"<div{attrs(mapping)}>") == list(mapping.items())


def _parse_attrs(markup: str) -> list[tuple[str, str | None]]:
    from html.parser import HTMLParser

    found: list[tuple[str, str | None]] = []

    class Parser(HTMLParser):
        def handle_starttag(self, tag: str, attributes: list[tuple[str, str | None]]) -> None:
            found.extend(attributes)

    parser = Parser(convert_charrefs=True)
    parser.feed(markup)
    parser.close()
    return found


# -- json_script ------------------------------------------------------------------------

BODY = re.compile(r'<script type="application/json"(?: id="[^"]*")?>(.*)</script>\Z', re.DOTALL)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
breakout_text = st.lists(
    st.sampled_from(
        [
            "</script>",
            "</SCRIPT\t",
            "<!--",
            "-->",
            "<script>",
            "\u2028",
            "\u2029",
            "</",
            "x",
            "&",
            "<",
            ">",
            "\\",
            '"',
            "'",
            "/",
            "\ud800",
            "\udfff",
        ]
    ),
    max_size=12,
).map("".join)


def _body(result: str) -> str:
    match = BODY.match(result)
    assert match, result
    return match.group(1)


def _as_utf16_reads(value: object) -> object:
    """*value* as a UTF-16 reader sees it: a high surrogate then a low one is one character.

    JSON (and JavaScript, whose strings are UTF-16) reads ``"\\ud800\\udfff"`` as
    U+103FF, so a value holding that pair of lone surrogates cannot come back as two.
    """
    if isinstance(value, str):
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    if isinstance(value, list):
        return [_as_utf16_reads(item) for item in value]
    if isinstance(value, dict):
        return {_as_utf16_reads(k): _as_utf16_reads(v) for k, v in value.items()}
    return value


@given(json_values | breakout_text | st.dictionaries(breakout_text, breakout_text, max_size=3))
def test_json_script_round_trips_and_cannot_break_out(value: object) -> None:
    result = json_script(value)
    assert type(result) is htmltext
    body = _body(result)
    assert json.loads(body) == _as_utf16_reads(value)
    for bad in ("</", "<!--", "<", ">", "&", "\u2028", "\u2029"):
        assert bad not in body
    assert not re.search("[\ud800-\udfff]", body)
    body.encode("utf-8")  # always encodable, even with lone surrogates in the value


def test_json_script_attributes() -> None:
    result = json_script({"a": 1}, element_id='x"><script>', nonce="abc")
    assert result == (
        '<script type="application/json" id="x&quot;&gt;&lt;script&gt;" nonce="abc">'
        '{"a":1}</script>'
    )
    assert json_script([1], "data") == '<script type="application/json" id="data">[1]</script>'


def test_json_script_escapes() -> None:
    assert _body(json_script("</script><!--\u2028&")) == (
        '"\\u003c/script\\u003e\\u003c!--\\u2028\\u0026"'
    )


def test_json_script_refuses_what_json_cannot_say() -> None:
    with pytest.raises(ValueError):
        json_script(float("nan"))
    with pytest.raises(TypeError):
        json_script(object())


# -- CSP nonce ------------------------------------------------------------------------------


def test_no_nonce_outside_a_request() -> None:
    ctx = contextvars.Context()
    with pytest.raises(LookupError, match="nonce_scope"):
        ctx.run(csp_nonce)


def test_nonce_scope_sets_and_restores() -> None:
    def run() -> None:
        with nonce_scope() as nonce:
            assert csp_nonce() == nonce
            assert re.fullmatch(r"[A-Za-z0-9_\-]{24}", nonce)
            with nonce_scope() as inner:
                assert csp_nonce() == inner != nonce
            assert csp_nonce() == nonce
        with pytest.raises(LookupError):
            csp_nonce()

    contextvars.Context().run(run)


def test_new_nonce_is_fresh_each_time() -> None:
    def run() -> None:
        first = new_nonce()
        assert csp_nonce() == first
        assert new_nonce() != first

    contextvars.Context().run(run)


def test_nonces_do_not_leak_between_threads() -> None:
    seen: list[str | None] = []

    def request() -> None:
        with nonce_scope() as nonce:
            seen.append(nonce)

    threads = [threading.Thread(target=request) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(seen)) == 8


def test_content_security_policy() -> None:
    assert content_security_policy("n0nce") == (
        "script-src 'nonce-n0nce' 'strict-dynamic' https: 'unsafe-inline'; "
        "object-src 'none'; base-uri 'none'"
    )

    def run() -> str:
        with nonce_scope() as nonce:
            policy = content_security_policy(
                directives={
                    "Default-Src": "'self'",
                    "object-src": None,
                    "img-src": ["'self'", "data:"],
                }
            )
            assert f"'nonce-{nonce}'" in policy
            return policy

    policy = contextvars.Context().run(run)
    assert policy.endswith("; base-uri 'none'; default-src 'self'; img-src 'self' data:")
    assert "object-src" not in policy


@pytest.mark.parametrize(
    "directives",
    [
        {"script-src": "'self'; img-src *"},
        {"img-src": ["a,b"]},
        {"img-src": ["x\r\nSet-Cookie: a=b"]},
        {"img-src": [""]},
        {"bad name": "x"},
        {"img-src;": "x"},
        {"img-src": ["caf\u00e9"]},
    ],
)
def test_content_security_policy_refuses_header_injection(directives: dict) -> None:
    with pytest.raises(ValueError, match="invalid CSP"):
        content_security_policy("n", directives)


# -- docs/security.md ------------------------------------------------------------------------


def test_security_doc_examples() -> None:
    """Each ``ptl`` block of docs/security.md compiles into a fresh module namespace;
    ``python`` blocks run in it and ``pycon`` blocks hold in it, as doctests."""
    doc = (Path(__file__).parents[2] / "docs" / "security.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```(\w+)\n(.*?)^```$", doc, flags=re.M | re.S)
    assert [kind for kind, _ in blocks].count("pycon") >= 5
    namespace: dict[str, object] = {}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for index, (kind, text) in enumerate(blocks):
        if kind == "ptl":
            namespace = {"__name__": f"security_doc_{index}"}
            exec(compile_ptl(text, f"<security.md block {index}>"), namespace)
        elif kind == "python":
            exec(compile(text, f"<security.md block {index}>", "exec"), namespace)
        elif kind == "pycon":
            parser = doctest.DocTestParser()
            test = parser.get_doctest(text, namespace, f"block {index}", None, 0)
            results = contextvars.Context().run(runner.run, test)
            assert results.attempted and not results.failed, text


# -- attrs, strengthened (issue 12) ---------------------------------------------------------


def test_attrs_markup_values_cannot_end_the_quoted_value() -> None:
    # A trusted value is markup, which may hold a bare '"'; in a quoted value it must not end it.
    result = attrs({"title": htmltext('x" onclick="alert(1)'), "class": Markup('a"b')})
    assert result == ' title="x&quot; onclick=&quot;alert(1)" class="a&quot;b"'
    assert _parse_attrs(f"<div{result}>") == [("title", 'x" onclick="alert(1)'), ("class", 'a"b')]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("srcset", "/a.png 1x, javascript:alert(1) 2x"),
        ("srcset", "/a.png 1x,javascript:alert(1)"),
        ("imagesrcset", "data:text/html,x 1x"),
        ("ping", "/count javascript:alert(1)"),
        ("ping", "/count\tvbscript:x"),
        ("archive", "a.jar,javascript:x"),
    ],
)
def test_attrs_checks_each_url_of_a_url_list(name: str, value: str) -> None:
    assert attrs({name: value}) == f' {name}="{UNSAFE_URL}"'


def test_attrs_keeps_good_url_lists() -> None:
    assert attrs({"srcset": "/a.png 1x, /b.png 2x"}) == ' srcset="/a.png 1x, /b.png 2x"'
    assert attrs({"ping": "/a https://b/c"}) == ' ping="/a https://b/c"'


@pytest.mark.parametrize(
    "style",
    [
        "background: url(javascript:alert(1))",
        "background:URL( 'https://evil/track' )",
        "width: expression(alert(1))",
        "x: u\\72l(https://evil)",
        "behavior: url(x.htc)",
        "-moz-binding: url(x.xml#x)",
        "@import 'https://evil'",
        "background-image: image-set('x.png' 1x)",
        "a: u&#114;l(x)",
        "a: /**/url(x)",
    ],
)
def test_attrs_drops_styles_that_load_or_run_anything(style: str) -> None:
    assert attrs({"style": style}) == ""
    assert attrs({"STYLE": style, "id": "a"}) == ' id="a"'


def test_attrs_keeps_plain_styles_and_trusted_ones() -> None:
    assert attrs({"style": "width: 10em; color: rgb(1, 2, 3)"}) == (
        ' style="width: 10em; color: rgb(1, 2, 3)"'
    )
    assert attrs({"style": htmltext("background: url(/a.png)")}) == (
        ' style="background: url(/a.png)"'
    )


@pytest.mark.parametrize(
    "name",
    ["x-data", "x-on:click", "hx-on:click", "hx-on::after-request", "@click", ":href", "v-on:click",
     "v-html", "ng-click", "data-bind", "data-hx-on:click", "ONCLICK", "xlink:onload"],
)  # fmt: skip
def test_attrs_refuses_every_attribute_the_engine_takes_for_code(name: str) -> None:
    # A framework runs these after the browser decoded them: escaping does not protect
    # them, so attrs() refuses a text value as it refuses onclick (one rule: the engine's).
    with pytest.raises(ValueError, match="is script"):
        attrs({name: "alert(1)"})
    assert attrs({name: htmltext("go()")}) == f' {name}="go()"'


def test_attrs_checks_every_attribute_the_engine_takes_for_a_url() -> None:
    for name in ("data-src", "data-href", "imageuri", "xml:base", "itemid", "formaction"):
        assert attrs({name: "javascript:alert(1)"}) == f' {name}="{UNSAFE_URL}"', name
    assert attrs({"data-src": "/a b&c"}) == ' data-src="/a b&amp;c"'
