"""The Pygments lexer for .ptl files, found through Pygments' own registry."""

# Pygments is a dev dependency: without it this module fails to import, never skips.
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.token import Keyword, Name

SOURCE = """\
def page [html] (title):
    "<h1>%s</h1>" % title

template footer(year):
    "(c) %d" % year

def generic[T](x: T) -> T:
    return x
"""


def tokens():
    return [(kind, value) for kind, value in get_lexer_by_name("ptl").get_tokens(SOURCE)]


def test_registered_by_name_and_filename():
    assert get_lexer_by_name("ptl").name == "PTL"
    assert get_lexer_for_filename("pages/index.ptl").name == "PTL"


def test_template_annotations_are_keywords():
    found = tokens()
    assert (Keyword.Pseudo, "html") in found
    assert (Keyword, "template") in found
    assert (Name.Function, "footer") in found


def test_generic_type_parameters_stay_names():
    found = tokens()
    assert (Name, "T") in found
    assert (Keyword.Pseudo, "T") not in found


def test_text_round_trips():
    assert "".join(value for _kind, value in tokens()) == SOURCE
