#!/usr/bin/env -S python3 -m ptl_wsgi.cgiapp
"""A one-file CGI application: templates, view and all, in PTL.

Deploy: make this file executable, put it where your web server runs CGI
programs, and make sure the first line finds a Python with ptl_wsgi installed
(``python3`` on the server's PATH, or that Python's full path after ``-S``).
``python -m ptl_wsgi.cgiapp`` compiles the file as a PTL module named __main__.
"""

from ptl_wsgi.cgiapp import run_cgi


# The look of the other example sites, inline: a CGI program is one file.
def stylesheet [html] ():
    # A literal: trusted CSS, followed by the engine and given the CSP nonce.  (A
    # markup value in a <style> is a value, never CSS: docs/contextual-escaping.md.)
    """<style>
body { font: 16px/1.5 system-ui, sans-serif; max-width: 42rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
header { border-bottom: 1px solid #ddd; padding-bottom: .5rem; }
.greeting { font-size: 1.25rem; }
.echo { background: #e8f5e9; padding: .5rem 1rem; }
input { width: 70%; }
footer { margin-top: 2.5rem; color: #666; font-size: 90%; }
</style>
"""


def layout [html] (title, body):
    "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>\n"
    "<title>%s · PTL via CGI</title>\n" % title
    stylesheet()
    "</head>\n<body>\n<header><strong>PTL via CGI</strong></header>\n"
    "<h1>%s</h1>\n" % title
    body
    "<footer>One executable PTL file, run as a new process for every request.</footer>\n"
    # An inline script: it gets the request's nonce (CSP is on), nothing to write.
    "<script>document.body.dataset.js = 'ran';</script>\n"
    "</body></html>\n"


def greeting [html] (request):
    name = request.args.get("name", "world")
    "<p class='greeting'>Hello, %s!</p>\n" % name
    if request.method == "POST":
        "<p class='echo'>You wrote: <q>%s</q></p>\n" % request.form.get("message", "")
    # An empty action posts back to this URL, query string and all.
    "<form method='post' action=''>\n"
    "<input name='message' placeholder='Say something'> <button>Send</button>\n"
    "</form>\n"
    "<p><small>Served by %s via CGI %s</small></p>\n" % (
        request.script_root or "this script", request.environ.get("GATEWAY_INTERFACE", "?"))


def page(request):
    return layout("A one-file CGI application", greeting(request))


if __name__ == "__main__":
    run_cgi(page)
