#!/usr/bin/env -S python3 -m ptl_wsgi.cgi
"""A one-file CGI application: templates, view and all, in PTL.

Deploy: make this file executable, put it where your web server runs CGI
programs, and make sure the first line finds a Python with ptl_wsgi installed
(``python3`` on the server's PATH, or that Python's full path after ``-S``).
``python -m ptl_wsgi.cgi`` compiles the file as a PTL module named __main__.
"""

from ptl_wsgi.cgi import run_cgi


def layout [html] (title, body):
    "<!doctype html>\n<html><head><meta charset='utf-8'><title>%s</title></head>\n" % title
    "<body>\n<h1>%s</h1>\n" % title
    body
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
