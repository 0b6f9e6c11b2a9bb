# ruff: noqa: E501  (example files and expected pages read best one to a line)
"""What the examples of the fragment pages need to run, and what their output must be.

A helper module for tests/project/test_docs.py, not a test module.  Each page's
:class:`Scenario` gives its examples the names they use but do not define
(``given``), the files they need beside the ones the page shows, and, after
block N runs, the assertions ``then[N]`` on what it made.  The code is run in
one namespace per page, in a fresh project directory that is the working
directory and first on ``sys.path``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Scenario:
    """The world one page's examples run in."""

    given: str = ""
    files: dict[str, str] = field(default_factory=dict)
    #: Blocks written to a file although their first line names none (a CGI script), as
    #: a path or (path, a prefix giving the excerpt the imports its module would have).
    named_blocks: dict[int, str | tuple[str, str]] = field(default_factory=dict)
    #: Blocks run in the namespace although their first line names a file (settings.py).
    run: set[int] = field(default_factory=set)
    then: dict[int, str] = field(default_factory=dict)
    cleanup: str = ""


LOADER = Scenario(
    given="""
class Post:
    title = "<Hello>"

post, user = Post(), "Ann & Bob"
""",
    files={"templates/blog/parts.ptl": "def byline [html] (name):\n    '<p>by %s</p>' % name\n"},
    then={
        0: """
assert html == "<title>&lt;Hello&gt;</title><main><p>by Ann &amp; Bob</p></main>", html
""",
    },
    cleanup="loader.close()",
)


WSGI = Scenario(
    given="""
import subprocess, sys, xmlrpc.client
from werkzeug.test import Client
from ptl_wsgi.loader import Loader
from ptl_wsgi.publish import Directory, get_request
from ptl_wsgi.wsgi import view

def legacy_app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"legacy"]

loader = Loader(["templates"])
root = loader.module("pages.ptl").Root()
""",
    files={
        "templates/parts.ptl": "def sidebar [html] (user):\n    '<aside>%s</aside>' % user\n",
    },
    named_blocks={7: "hello.cgi"},
    then={
        0: """
assert Client(app).get("/?name=<b>").text == "<p>Hello, &lt;b&gt;!</p>"
""",
        1: """
client = Client(app)
assert client.get("/sidebar?user=<i>").text == "<aside>&lt;i&gt;</aside>"
assert client.get("/elsewhere").text == "legacy"
""",
        2: """
response = Client(app).get("/")
policy = response.headers["Content-Security-Policy"]
assert "'nonce-" in policy and "img-src 'self' data:" in policy, policy
assert '<a href="/item-1/">Item 1</a>' in response.text
scripts = CSP(view(lambda request: loader.module("scripts.ptl").scripts()))
response = Client(scripts).get("/")
nonce = response.headers["Content-Security-Policy"].split("'nonce-")[1].split("'")[0]
assert response.text == f'<script src="/static/app.js" nonce="{nonce}"></script>'
""",
        5: """
import runpy
client = Client(runpy.run_path("app.py")["app"])
assert client.get("/item-1/").text == "<h1>1</h1>"
assert client.get("/item-1").status_code == 301
assert client.get("/item-1/edit").status_code == 403
signed_in = {"Authorization": "Basic YTpi"}
assert client.get("/item-1/edit", headers=signed_in).text == "<form>...</form>"
assert client.get("/robots.txt").text == "User-agent: *\\n"
assert client.get("/nothing/").status_code == 404
""",
        6: """
def call(method, *args):
    body = xmlrpc.client.dumps(args, method).encode()
    response = Client(app).post("/", data=body, content_type="text/xml")
    return xmlrpc.client.loads(response.data)[0][0]

assert call("add", 2, 3) == 5
try:
    call("get", "k")
except xmlrpc.client.Fault as fault:
    assert (fault.faultCode, fault.faultString) == (404, "no 'k'")
else:
    raise AssertionError("no fault")
""",
        7: """
environ = {"GATEWAY_INTERFACE": "CGI/1.1", "REQUEST_METHOD": "GET", "QUERY_STRING": "name=<b>",
           "SERVER_NAME": "localhost", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
           "PYTHONPATH": ":".join(sys.path)}
result = subprocess.run([sys.executable, "-m", "ptl_wsgi.cgiapp", "hello.cgi"], env=environ,
                        capture_output=True, timeout=60)
assert result.stdout.endswith(b"\\r\\n\\r\\n<p>Hello, &lt;b&gt;!</p>"), result
""",
    },
    cleanup="loader.close()",
)


FORMS = Scenario(
    given="""
import datetime, re
from typing import Protocol
import flask
from django.test import RequestFactory
from itsdangerous import URLSafeTimedSerializer
from werkzeug.test import Client
from ptl_wsgi.forms import CSRFPolicy, FormData

def token_in(html, field="csrf_token"):
    return re.search(f'name="{field}" value="([^"]+)"', html).group(1)

# Block 0's `request`: a Flask request posting a valid Flask-WTF token.
doc_app = flask.Flask("doc_forms")
doc_app.config["SECRET_KEY"] = "doc secret"
token = URLSafeTimedSerializer("doc secret", salt="wtf-csrf-token").dumps("r" * 40)
context = doc_app.test_request_context(
    "/", method="POST", data={"name": "Ann <3", "email": "ann@example.com", "csrf_token": token}
)
context.push()
flask.session["csrf_token"] = "r" * 40
request = flask.request
saved, stored, placed, tasks = [], [], [], []
save = saved.append
store = lambda author, body: stored.append((author, body))
place_order = lambda size, quantity: placed.append((size, quantity))
add_task = lambda title, due: tasks.append((title, due))
""",
    then={
        0: """
context.pop()
assert saved == [{"name": "Ann <3", "email": "ann@example.com"}], saved
assert "<form" in html and 'value="Ann &lt;3"' in html
""",
        1: """
client = app.test_client()
token = token_in(client.get("/comment").text)
page = client.post("/comment", data={"author": "<b>", "body": "HELLO", "csrf_token": token}).text
assert "Please don&#x27;t shout." in page and 'value="&lt;b&gt;"' in page
response = client.post("/comment", data={"author": "Al", "body": "Hi", "csrf_token": token})
assert (response.status_code, response.location, stored) == (302, "/thanks", [("Al", "Hi")])
assert "expired" in client.post("/comment", data={"author": "Al", "body": "Hi"}).text
""",
        2: """
factory = RequestFactory()
assert 'name="csrfmiddlewaretoken"' in order(factory.get("/")).content.decode()
posted = factory.post("/", {"size": "l", "quantity": "2"})
posted.csrf_processing_done = True  # what CsrfViewMiddleware marks on a good token
response = order(posted)
assert (response.status_code, response["Location"], placed) == (302, "/done/", [("l", 2)])
""",
        3: """
client = Client(application)
token = token_in(client.get("/").text)
data = {"title": "<t>", "due": "2026-01-02", "csrf_token": token}
assert client.post("/", data=data).status_code == 303
assert tasks == [("<t>", datetime.date(2026, 1, 2))]
assert "expired" in client.post("/", data={"title": "x"}).text
""",
        4: """
from ptl_wsgi.forms import DateWidget, Form, SubmitButton, TextWidget
from ptl_wsgi.loader import Loader
pages_loader = Loader(["."])
pages = pages_loader.module("pages.ptl")
form = Form({"title": "<x>"}, csrf=False)
form.add(TextWidget, "title", required=True)
form.add(DateWidget, "due")
form.add(SubmitButton, "save", "Save")
html = str(pages.edit_page(form))
assert html.startswith('<h1>Edit</h1><form method="post"'), html
assert html.rstrip().endswith('value="1">Save</button>\\n</div>\\n</form>'), html
assert '<div class="row wide"><label for="id_title">' in html and 'value="&lt;x&gt;"' in html
pages_loader.close()
""",
        5: """
from ptl_wsgi.forms import Form, TextWidget, ValidationError

def letters_only(value):
    if not value.isalpha():
        raise ValidationError("Use letters only.")

form = Form({"name": '"><script>'}, csrf=False)
form.add(TextWidget, "name", required=True, hint="As you like to be called",
         validators=[letters_only])
form.validate()
shown = re.sub(r"\\n\\s+", " ", BLOCK_TEXT.strip())
assert str(form["name"].render()).rstrip() == shown, repr(str(form["name"].render()))
""",
        6: """
from ptl_wsgi.forms import adapters
public = lambda cls: {name for name in vars(cls) if not name.startswith("_")}
assert public(FormsAdapter) == public(adapters.FormsAdapter) == {"form_data", "csrf_policy"}
""",
        7: """
assert form.is_submitted() and form.data.getlist("tags") == ["a", "b"]
assert form.data.getlist("name") == ["<script>"]
""",
    },
)


FLASK = Scenario(
    given="""
import os, re
import flask
from flask import Blueprint, get_template_attribute, stream_template

class Post:
    title = "<A>"

load_posts = lambda: [Post()]
post, theme = Post(), "dark"

class User:
    name, email = "Ann <3", "ann@example.com"

class Mail:
    sent = []

    def send(self, to, body):
        self.sent.append((to, body))

user, mail = User(), Mail()

class DB:
    def all_entries(self):
        return [{"id": 1, "name": "<Al>"}, {"id": 2, "name": "Bo"}]

db = DB()
entry = db.all_entries()[0]
bp = Blueprint("entries", "doc_entries", template_folder="entries/templates", root_path=os.getcwd())
""",
    files={
        "templates/about.html": "<p>{{ 'Jinja2 & co' }}</p>",
        "templates/layout.ptl": (
            "def page [html] (title, body):\n    '<title>%s</title>' % title\n    body\n"
            "def head [html] (title):\n    '<h1>%s</h1><ul>' % title\n"
            "def foot [html] ():\n    '</ul>'\n"
        ),
        "templates/partials.ptl": "def entry_card [html] (entry):\n    '<li>%s</li>' % entry['name']\n",
        "templates/partials/card.ptl": "def render [html] (entry):\n    '<div>%s</div>' % entry['name']\n",
        "templates/post.ptl": "def render [html] (post):\n    '<p>%s</p>' % post.title\n",
        "templates/themes/dark/post.ptl": "def render [html] (post):\n    '<p class=dark>%s</p>' % post.title\n",
        "templates/mail/welcome.ptl": "def render [plain] (user):\n    'Hello %s!' % user.name\n",
        "templates/robots.ptl": "def render [plain] ():\n    'User-agent: *'\n",
        "templates/macros.html": "{% macro button(label) %}<button>{{ label }}</button>{% endmacro %}",
        "templates/form.ptl": "def render [html] (button):\n    '<form>%s</form>' % button\n",
        "templates/card.ptl": "def render [html] (post):\n    '<b>%s</b>' % post.title\n",
        "templates/page.html": "<main>{{ card }}</main>",
        "myapp/__init__.py": (
            "import flask\nfrom ptl_wsgi.contrib.flask import PTL\n"
            "app = flask.Flask(__name__)\nPTL(app)\n"
            "def count_entries():\n    return 7\n"
            "from myapp import views  # noqa: E402\n"
        ),
        "myapp/templates/about.ptl": "def render [html] (count):\n    '<p>%d entries</p>' % count\n",
    },
    named_blocks={
        5: "templates/flashes.ptl",
        8: ("myapp/views.py", "from myapp import app, count_entries\n"),
        12: "templates/scripts.ptl",
        13: "templates/includes.html",
    },
    then={
        0: """
# Routes the later examples need, added before the app serves anything.
app.secret_key = "doc secret"  # for flash()
app.add_url_rule("/archive", "archive", lambda: "")
app.add_url_rule("/scripts", "scripts", lambda: flask.render_template("scripts.ptl"))
app.add_url_rule("/includes", "includes", lambda: flask.render_template("includes.html", entry=entry))
""",
        2: """
assert "ptl" in create_app().extensions
request_context = app.test_request_context("/")
request_context.push()
""",
        3: """
assert _ == "<p class=dark>&lt;A&gt;</p>", _
""",
        4: """
entries_app = flask.Flask("doc_entries_app", root_path=os.getcwd())
PTL(entries_app)
""",
        6: """
assert body == "Hello Ann <3!" and mail.sent == [("ann@example.com", "Hello Ann <3!")]
""",
        7: """
assert _ == "<title>Coming soon</title><p>Soon.</p>", _
""",
        8: """
import myapp
assert myapp.app.test_client().get("/about").text == "<p>7 entries</p>"
""",
        10: """
entries_app.register_blueprint(bp)
response = entries_app.test_client().get("/")
assert response.is_streamed
assert response.text == "<h1>Archive</h1><ul><li>&lt;Al&gt;</li><li>Bo</li></ul>", response.text
with entries_app.test_request_context("/"):
    shown = flask.render_template("entries/show.ptl", entry=entry)
assert shown == "<title>Signature #1</title><li>&lt;Al&gt;</li>", shown
""",
        14: """
assert button == "<button>Save</button>"
assert flask.render_template("form.ptl", button=button) == "<form><button>Save</button></form>"
assert _ == "<main><b>&lt;A&gt;</b></main>", _
with app.test_request_context("/"):
    flask.flash("<hi>")
    flashes = flask.render_template("flashes.ptl", posts=[])
assert flashes == '<p class="flash">&lt;hi&gt;</p><a href="/archive">Archive</a>', flashes
request_context.pop()
client = app.test_client()
response = client.get("/")
assert response.text == "<ul><li>&lt;A&gt;</li></ul>", response.text
assert client.get("/about").text == "<p>Jinja2 &amp; co</p>"
robots = client.get("/robots.txt")
assert (robots.text, robots.mimetype) == ("User-agent: *", "text/plain")
policy = response.headers["Content-Security-Policy"]
assert "img-src 'self' data:" in policy
page = client.get("/scripts")
nonce = page.headers["Content-Security-Policy"].split("'nonce-")[1].split("'")[0]
assert page.text == f'<script src="/static/app.js" nonce="{nonce}"></script>', page.text
includes = client.get("/includes").text
shown = re.sub(r"\\s+", "", includes)
assert shown == "<div>&lt;Al&gt;</div><li>&lt;Al&gt;</li><li>&lt;Al&gt;</li>", includes
""",
    },
)


DJANGO = Scenario(
    given="""
import re, sys, types, unittest
from pathlib import Path
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpResponse
from django.template import engines
from django.test import RequestFactory, SimpleTestCase, override_settings

BASE_DIR = Path.cwd()
factory = RequestFactory()

class Question:
    def __init__(self, text):
        self.text = text

    def get_absolute_url(self):
        return "/polls/1/?a=1&b=2"

class User:
    first_name, email = "Ann", "ann@example.com"

user = User()
""",
    files={
        "templates/layout.ptl": (
            "def page [html] (title, body, messages):\n"
            "    '<title>%s</title>' % title\n"
            "    for message in messages:\n"
            "        '<p>%s</p>' % message\n"
            "    body\n"
        ),
        "doc_polls_urls.py": (
            "from django.shortcuts import render\n"
            "from django.urls import path\n"
            "class Question:\n"
            "    text = 'Why?'\n"
            "    def get_absolute_url(self):\n"
            "        return '/polls/1/'\n"
            "def index(request):\n"
            "    context = {'questions': [Question()], 'messages': []}\n"
            "    return render(request, 'polls/index.ptl', context)\n"
            "urlpatterns = [path('polls/', index)]\n"
        ),
    },
    named_blocks={
        2: "templates/polls/index.ptl",
        3: "templates/edit.ptl",
        5: "templates/scripts.ptl",
    },
    run={0, 4},
    then={
        0: """
TEMPLATES[1]["OPTIONS"]["context_processors"] = []  # the page's [...]
templates_settings = override_settings(TEMPLATES=TEMPLATES)
templates_settings.enable()
assert type(engines["ptl"]).__name__ == "PTLTemplates"
assert engines["ptl"].template_dirs[0] == BASE_DIR / "templates"
""",
        1: """
backend = {"BACKEND": "django.template.backends.django.DjangoTemplates"}
with override_settings(TEMPLATES=[backend, backend]):
    try:
        engines.all()
    except ImproperlyConfigured as exc:
        assert " ".join(str(exc).split()) == " ".join(BLOCK_TEXT.split(": ", 1)[1].split())
    else:
        raise AssertionError("no error")
""",
        2: """
html = engines["ptl"].get_template("polls/index.ptl").render(
    {"questions": [Question("<Why?>")], "messages": ["Saved & done"]}
)
assert html == (
    "<title>Polls</title><p>Saved &amp; done</p><ul>\\n"
    '<li><a href="/polls/1/?a=1&amp;b=2">&lt;Why?&gt;</a></li>\\n</ul>\\n'
), html
assert engines["ptl"].get_template("polls/index.ptl:row").render({"question": Question("Q")}) == (
    '<li><a href="/polls/1/?a=1&amp;b=2">Q</a></li>\\n'
)
""",
        3: """
from django import forms

class NameForm(forms.Form):
    name = forms.CharField(initial="<Al>")

request = factory.get("/edit/")
html = engines["ptl"].get_template("edit.ptl").render({"form": NameForm()}, request)
assert html.startswith('<form method="post" action="/edit/"><input type="hidden" name="csrfmiddlewaretoken"'), html
assert 'name="name" value="&lt;Al&gt;"' in html and html.endswith("<button>Save</button></form>")
""",
        4: """
from ptl_wsgi.contrib.django import CSPMiddleware

with override_settings(MIDDLEWARE=MIDDLEWARE, PTL_CSP_DIRECTIVES=PTL_CSP_DIRECTIVES):
    def view(request):
        return HttpResponse(engines["ptl"].get_template("scripts.ptl").render(request=request))

    response = CSPMiddleware(view)(factory.get("/"))
policy = response["Content-Security-Policy"]
assert "img-src 'self' data:" in policy and "frame-ancestors 'none'" in policy, policy
nonce = policy.split("'nonce-")[1].split("'")[0]
assert response.content.decode() == f'<script src="/static/app.js" nonce="{nonce}"></script>'
""",
        7: """
from django.core import mail
assert mail.outbox[-1].body == "Hello Ann,\\n\\nwelcome to <Our Site> & enjoy.\\n"
assert mail.outbox[-1].to == ["ann@example.com"]
""",
        8: """
response = greet(factory.get("/", {"name": "<b>"}))
assert response.content == b"<p>Hello, &lt;b&gt;</p>"
assert response["Content-Type"] == "text/html; charset=utf-8"
""",
        9: """
@override_settings(ROOT_URLCONF="doc_polls_urls")
class PollsTests(SimpleTestCase):
    pass

PollsTests.test_index = test_index
result = unittest.TestResult()
unittest.TestSuite([PollsTests("test_index")]).run(result)  # as Django's runner runs it
assert result.wasSuccessful() and result.testsRun == 1, result.failures + result.errors
""",
    },
    cleanup="""
if "templates_settings" in globals():
    templates_settings.disable()
""",
)


SCENARIOS: dict[str, Scenario] = {
    "loader.md": LOADER,
    "wsgi.md": WSGI,
    "forms.md": FORMS,
    "flask.md": FLASK,
    "django.md": DJANGO,
}
