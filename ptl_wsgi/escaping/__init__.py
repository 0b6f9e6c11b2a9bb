"""The escaping engine: every rule of contextual escaping, in one place.

Modelled on Go's html/template: a context type and its transitions, the
choice of escaper, one module per output language.

* :mod:`~ptl_wsgi.escaping.rules` -- the tables, each once: script schemes,
  URL-valued attributes, attributes frameworks run as code, raster ``data:``
  types, characters JSON may not hold in a page, the int rule, "is markup",
  "is a t-string";
* :mod:`~ptl_wsgi.escaping.context` -- the context engine: where a value
  lands, and the name of the escaper that fits there;
* :mod:`~ptl_wsgi.escaping.url`, :mod:`~ptl_wsgi.escaping.js`,
  :mod:`~ptl_wsgi.escaping.css`, :mod:`~ptl_wsgi.escaping.markup` -- the
  escapers of each language, str to str (and the URL scheme policy);
* :mod:`~ptl_wsgi.escaping.escapers` -- those escapers made into functions of
  any value that return one htmltext class's markup, by name;
* :mod:`~ptl_wsgi.escaping.planner` -- the plan of literal parts (one cache),
  for t-strings and run-time formatting.

Nothing here imports the rest of ptl_wsgi: the compiler, ``html``, ``beyond_escaping``
and the integrations use it.  Importing this package loads nothing else.
"""
