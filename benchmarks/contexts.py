"""Contextual escaping per context: one value in each context against the same value in text.

Each context is a one-value [html] template (an f-string); its render is timed
against the render of ``f'<p>{v}</p>'`` with the same value, interleaved (both
once per round): the best time of each, and the median of the rounds' ratios.
With --callgrind, instructions per render too (valgrind's callgrind, repeatable
where times on a shared machine are not), for the values numbered by
--callgrind-values (--rounds 0: no timing).  Prints a Markdown table.

    .venv/bin/python benchmarks/contexts.py [--rounds N] [--values N] [--callgrind]
        [--callgrind-values 0,1,2,3]

Issue #27's target: every context within 2x text (aim 1.2x), judged by instructions
where counted (``--callgrind``), else by the time ratios; the last line states it
(``**met**`` or ``**NOT met**``) and the script exits 1 on a miss (``make bench``).
"""

from __future__ import annotations

import argparse
import marshal
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _results import instructions_per_call, interleaved  # noqa: E402

# (name, the template's f-string, with {v} where the value lands)
CONTEXTS = [
    ("text", "<p>{v}</p>"),
    ("URL start", '<a href="{v}">x</a>'),
    ("URL path", '<a href="/tags/{v}">x</a>'),
    ("URL query", '<a href="/tags?t={v}">x</a>'),
    ("JS value", "<script>var s = {v};</script>"),
    ("JS string in onclick", "<button onclick=\"go('{v}')\">x</button>"),
    ("JS string", "<script>var s = '{v}';</script>"),
    ("JS regexp", "<script>var r = /{v}/;</script>"),
    ("unquoted attribute", "<input value={v}>"),
    ("CSS in style", '<p style="color: {v}">x</p>'),
    ("CSS string", "<style>p::after {{ content: '{v}' }}</style>"),
    ("comment", "<!-- {v} -->"),
    ("srcdoc", '<iframe srcdoc="{v}"></iframe>'),
    ("srcset", '<img srcset="{v}">'),
]
VALUES = ["/articles/1000", "web & html", "python", "/search?q=web pages&lang=en"]
CALLGRIND_RENDERS = 200
TARGET = 2.0
# The parent's compiled templates, for its children (by the environment: one per run).
CODE_VARIABLE = "PTL_BENCH_CONTEXTS_CODE"


def compiled() -> Any:
    from ptl_wsgi import compiler

    lines = []
    for index, (_, text) in enumerate(CONTEXTS):
        lines += [f"def t{index} [html] (v):", f"    f{text!r}", ""]
    return compiler.compile_ptl("\n".join(lines), "contexts.ptl")


def renders(code: Any) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "bench_contexts"}
    exec(code, namespace)
    return {name: namespace[f"t{index}"] for index, (name, _) in enumerate(CONTEXTS)}


def child(context: str, value: str, count: int) -> None:
    # The code compiled by the parent: the compiler is not loaded under valgrind.
    render = renders(marshal.loads(Path(os.environ[CODE_VARIABLE]).read_bytes()))[context]
    render(value)
    for _ in range(count):
        render(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=0.04)
    parser.add_argument("--values", type=int, default=len(VALUES))
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument(
        "--callgrind-values",
        default=",".join(map(str, range(len(VALUES)))),
        help="the indexes of the values counted, comma-separated",
    )
    parser.add_argument("--contexts", help="the contexts measured, comma-separated (all)")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], VALUES[int(args.child[1])], int(args.child[2]))
        return 0
    from ptl_wsgi.html import IMPLEMENTATION

    start = time.perf_counter()
    code = compiled()
    path = Path(tempfile.gettempdir()) / f"ptl_bench_contexts-{os.getpid()}.marshal"
    path.write_bytes(marshal.dumps(code))
    os.environ[CODE_VARIABLE] = str(path)
    found = renders(code)
    text = found["text"]
    print(f"htmltext twin: {IMPLEMENTATION}; best of {args.rounds} interleaved rounds")
    print()
    header = "| context | template | value | µs | text µs | ratio |"
    rule = "|---|---|---|---|---|---|"
    if args.callgrind:
        header += " instructions | text | ratio |"
        rule += "---|---|---|"
    print(header)
    print(rule)
    text_counts: dict[int, float] = {}
    # (ratio, "context, value") of each row, by instructions where counted, else by time
    judged: list[tuple[float, str]] = []
    callgrind_values = {int(i) for i in args.callgrind_values.split(",")}
    chosen = args.contexts.split(",") if args.contexts else [name for name, _ in CONTEXTS[1:]]
    for name, template in CONTEXTS[1:]:
        if name not in chosen:
            continue
        for index, value in enumerate(VALUES[: args.values]):
            render = found[name]
            calls = {
                "text": lambda value=value: text(value),
                name: lambda value=value, render=render: render(value),
            }
            row = f"| {name} | `{template}` | `{value}` |"
            if args.rounds:
                times = interleaved(calls, args.rounds, args.seconds)
                mine, base = min(times[name]), min(times["text"])
                ratio = statistics.median(
                    a / b for a, b in zip(times[name], times["text"], strict=True)
                )
                row += f" {mine * 1e6:.2f} | {base * 1e6:.2f} | {ratio:.2f} |"
                if not args.callgrind:
                    judged.append((ratio, f"{name}, `{value}`"))
            else:
                row += " | | |"
            if args.callgrind and index in callgrind_values:
                if index not in text_counts:
                    argv = [__file__, "--child", "text", str(index)]
                    text_counts[index] = instructions_per_call(argv, CALLGRIND_RENDERS)
                argv = [__file__, "--child", name, str(index)]
                count = instructions_per_call(argv, CALLGRIND_RENDERS)
                base_count = text_counts[index]
                row += f" {count:,.0f} | {base_count:,.0f} | {count / base_count:.2f} |"
                judged.append((count / base_count, f"{name}, `{value}`"))
            elif args.callgrind:
                row += " | | |"
            print(row, flush=True)
    path.unlink()
    print(f"\n({time.perf_counter() - start:.0f} s)")
    if not judged:
        return 0
    by = "instructions" if args.callgrind else "time"
    missed = sorted((r for r in judged if r[0] > TARGET), reverse=True)
    worst = max(judged)
    if missed:
        rows = "; ".join(f"{where} {ratio:.2f}x" for ratio, where in missed)
        print(f"- every context within {TARGET}x text ({by}): **NOT met** ({rows})")
        return 1
    print(
        f"- every context within {TARGET}x text ({by}): **met** "
        f"(at worst {worst[0]:.2f}x: {worst[1]})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
