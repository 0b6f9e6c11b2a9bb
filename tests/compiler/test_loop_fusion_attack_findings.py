"""An attacker's review of loop fusion and the TemplateIO move: what it found, as tests.

Frame readers reached other than by a bare name, signals during a fused loop over
a C iterator, the twins on parts the compiler never makes, and pickles of the
inactive twin's TemplateIO.
"""

from __future__ import annotations

import pickle
import signal
import types
from typing import Any

import pytest
from ptl_helpers import compiled, outcome

from ptl_wsgi import html


def _module(source: str, fuse: bool, name: str) -> types.ModuleType:
    return compiled(source, f"{name}_{fuse}", _FUSE_LOOPS=fuse)


# 1. The name check misses frame readers reached other than by a bare name
#    (builtins.locals(), builtins.eval(), sys._getframe().f_locals): the loop is
#    fused, the variable is unbound after it, and the output changes.
FRAME_READERS = """
import builtins, sys

def by_builtins_locals [html] (items):
    for item in items:
        "<li>"
        item
    builtins.locals().get("item", "UNBOUND")

def by_builtins_eval [html] (items):
    for item in items:
        "<li>"
        item
    builtins.eval("item")

def by_getframe [html] (items):
    for item in items:
        "<li>"
        item
    sys._getframe().f_locals.get("item", "UNBOUND")
"""


@pytest.mark.parametrize("name", ["by_builtins_locals", "by_builtins_eval", "by_getframe"])
def test_a_frame_reader_not_called_by_name_keeps_the_loop(name: str) -> None:
    fused = _module(FRAME_READERS, True, "readers")
    loop = _module(FRAME_READERS, False, "readers")
    items = ["a", "<last>"]
    assert outcome(getattr(loop, name), items)[2].endswith("&lt;last&gt;")
    assert outcome(getattr(fused, name), items) == outcome(getattr(loop, name), items)


# 2. The C loop_output never lets a signal handler run: over a C iterator (no
#    Python code per item) a KeyboardInterrupt or an alarm-based timeout waits
#    until the whole iterable is consumed (forever for itertools.count()).  The
#    unfused loop, and the Python twin, stop at once.
class _Timeout(Exception):
    pass


def _consumed_before_timeout(run: Any) -> int:
    """How many of 20000 items run() takes from its iterator before a 5 ms alarm stops it."""
    source = iter([10**6] * 20000)
    items = map(bytes, source)  # a C iterator, about 10 us an item: no bytecode runs

    def handler(signum: int, frame: Any) -> None:
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.005)
        with pytest.raises(_Timeout):
            run(items)
            signal.pause()  # (not reached when the alarm interrupts run())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return 20000 - source.__length_hint__()


LOOP = """
def page [html] (items):
    "<ul>"
    for item in items:
        "<li>"
    "</ul>"
"""


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer")
def test_a_fused_loop_is_interrupted_by_a_signal_like_the_loop() -> None:
    loop = _module(LOOP, False, "signals")
    fused = _module(LOOP, True, "signals")
    assert "_ptl_loop_output" in fused.page.__code__.co_names
    assert _consumed_before_timeout(loop.page) < 20000
    assert _consumed_before_timeout(fused.page) < 20000


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer")
@pytest.mark.parametrize("twin_name", ["python", "c"])
def test_loop_output_lets_signal_handlers_run(twin_name: str) -> None:
    twin = html.implementation(twin_name)
    consumed = _consumed_before_timeout(lambda items: twin.module.loop_output([], items, ("x",)))
    assert consumed < 20000


# 3. C and Python twins of loop_output differ: C's shortcut for field_output and
#    percent_output returns a simple item without calling, so a part with the
#    wrong number of arguments is accepted by C (for a str, int or float item
#    only) and refused by Python.
@pytest.mark.parametrize(
    "make",
    [
        lambda twin: ((twin.field_output, twin.htmltext("x")),),
        lambda twin: ((twin.percent_output,),),
        lambda twin: ((twin.percent_output, None, None),),
    ],
    ids=["field_output+extra", "percent_output-alone", "percent_output+2"],
)
def test_loop_output_twins_agree_on_odd_parts(make: Any) -> None:
    outcomes = []
    for name in ("python", "c"):
        twin = html.implementation(name)
        out: list[Any] = []
        try:
            twin.module.loop_output(out, ["x", 1], make(twin))
            outcomes.append(("returned", out))
        except TypeError:
            outcomes.append(("raised", TypeError))
    assert outcomes[0] == outcomes[1]


# 4. TemplateIO: the class built for the twin that is not active claims to be
#    ptl_wsgi.html.TemplateIO (the active twin's), so it no longer pickles (the
#    Python twin's did before the move).
@pytest.mark.skipif(html.IMPLEMENTATION != "c", reason="the C twin must be active")
def test_the_python_twins_templateio_pickles() -> None:
    twin = html.implementation("python")
    out = twin.TemplateIO(html=True)
    out += "<a>"
    copy = pickle.loads(pickle.dumps(out))
    assert str(copy.getvalue()) == "&lt;a&gt;"
