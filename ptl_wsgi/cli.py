"""The ``ptl-wsgi`` command line (also ``python -m ptl_wsgi``)."""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Iterator, Sequence


def version_text() -> str:
    """One line: package version, Python version, and the accelerator's state."""
    from ptl_wsgi import __version__
    from ptl_wsgi.html import ACCELERATOR_STATUS, IMPLEMENTATION

    if IMPLEMENTATION == "c":
        accel = "C accelerator active"
    else:
        accel = f"C accelerator inactive: {ACCELERATOR_STATUS}; using pure Python"
    return (
        f"ptl-wsgi {__version__} "
        f"(Python {platform.python_version()}, {platform.python_implementation()}; {accel})"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ptl-wsgi",
        description="Tools for PTL templates: compile, check, inspect, render, serve and "
        "convert .ptl files.",
    )
    parser.add_argument(
        "--version", action="store_true", help="print versions and whether the C accelerator is on"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    compile_cmd = commands.add_parser(
        "compile",
        help="compile .ptl files into their __pycache__ (for read-only deployments)",
        description="Compile every .ptl file under each PATH into its bytecode cache.",
    )
    compile_cmd.add_argument("paths", nargs="+", metavar="PATH", help=".ptl file or directory")
    compile_cmd.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    compile_cmd.set_defaults(handler=_compile)
    check = commands.add_parser(
        "check",
        help="report syntax errors in .ptl files as file:line:col: message, and warn "
        "where a template concatenates a value into an attribute, URL or script",
        description="Compile every .ptl file under each PATH in memory; exit 1 on any error.",
    )
    check.add_argument("paths", nargs="+", metavar="PATH", help=".ptl file or directory")
    check.add_argument(
        "--contexts",
        action="store_true",
        help="print each value of the [html] templates: file:line:col: its HTML context "
        "and the escaper contextual escaping gives it",
    )
    check.add_argument(
        "--csp",
        action="store_true",
        help="report what a strict Content-Security-Policy forbids (inline event handlers, "
        "javascript: URLs, framework attributes that need 'unsafe-eval', ...) as "
        "file:line:col: csp: message and how to rewrite it; exit 1 if any",
    )
    check.set_defaults(handler=_check)
    hashes = commands.add_parser(
        "csp-hashes",
        help="print the CSP 'sha256-...' source of every static inline <script> of the "
        "[html] templates (for pages cached whole, where the nonce cannot change)",
        description="Compile every .ptl file under each PATH in memory and print, for each "
        "inline <script> whose text has no value, its 'sha256-...' source and where it is. "
        "Give them to PTL_CSP_HASHES (Flask, Django) or CSP(app, hashes=...).",
    )
    hashes.add_argument("paths", nargs="+", metavar="PATH", help=".ptl file or directory")
    hashes.set_defaults(handler=_csp_hashes)
    lint = commands.add_parser(
        "lint",
        help="run ruff on .ptl files, positions in the .ptl files",
        description="Run ruff (with the project's configuration) on every .ptl file under "
        "each PATH, through the compiler's column-preserving Python view; B018, B015 and "
        "PLW0133 are not reported on a template's output statements. Exit 1 on any finding. "
        "There is no --fix: fix the templates by hand.",
    )
    lint.add_argument(
        "paths",
        nargs="*",
        default=["."],
        metavar="PATH",
        help=".ptl file or directory (default: .)",
    )
    lint.set_defaults(handler=_lint)
    stubs = commands.add_parser(
        "stubs",
        help="write a .pyi stub beside each .ptl file, for mypy and pyright",
        description="Write X.pyi beside every X.ptl under each PATH, so that type checkers "
        "resolve imports of template modules from .py code and check calls against the "
        "templates' signatures ([html] templates return htmltext, [plain] ones str).",
    )
    stubs.add_argument(
        "paths", nargs="*", default=["."], metavar="PATH", help=".ptl file or directory"
    )
    stubs.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if a stub is missing or out of date",
    )
    stubs.set_defaults(handler=_stubs)
    typecheck = commands.add_parser(
        "typecheck",
        help="type-check the code in .ptl files (mypy or pyright), .ptl positions",
        description="Run mypy or pyright, with the project's configuration, on every .ptl "
        "file under each PATH through the compiler's Python view; a template returns "
        "htmltext ([html]) or str ([plain]). Prints file:line:col: severity: message; "
        "exit 1 on any error.",
    )
    typecheck.add_argument(
        "paths", nargs="*", default=["."], metavar="PATH", help=".ptl file or directory"
    )
    typecheck.add_argument(
        "--checker",
        choices=["mypy", "pyright"],
        help="the checker to run (default: mypy if installed, else pyright)",
    )
    typecheck.add_argument(
        "--root",
        default=".",
        help="the project whose Python files and configuration the checker uses (default: .)",
    )
    typecheck.set_defaults(handler=_typecheck)
    show = commands.add_parser(
        "show",
        help="print the Python a .ptl file compiles to",
        description="Print the Python source the PTL compiler produces for FILE.",
    )
    show.add_argument("file", metavar="FILE", help="a .ptl file")
    show.set_defaults(handler=_show)
    _add_render(commands)
    _add_serve(commands)
    _add_convert(commands)
    return parser


def _add_render(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    render = commands.add_parser(
        "render",
        help="render a template with JSON arguments and print the result",
        description="Render FILE.ptl's template FUNC (default: render) and print the output. "
        "A JSON object gives the arguments, by the loader's context rules. FILE's "
        "directory (or --root) is the template directory that relative imports start from.",
    )
    render.add_argument(
        "--root",
        metavar="DIR",
        help="the template directory, for templates that import from above their own",
    )
    render.add_argument("template", metavar="FILE.ptl[:FUNC]", help="the template to render")
    source = render.add_mutually_exclusive_group()
    source.add_argument("--json", metavar="OBJECT", help="the arguments as a JSON object")
    source.add_argument(
        "--json-file", metavar="FILE", help="read the JSON object from FILE ('-': stdin)"
    )
    render.set_defaults(handler=_render)


def _add_serve(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser(
        "serve",
        help="serve a directory of templates, or a publisher, for development",
        description="Serve the templates in DIR (/blog/post renders blog/post.ptl's render "
        "with the query parameters as arguments; / lists them); edits show at the next "
        "request. With --publisher, serve MODULE:ROOT (a Directory, imported with DIR "
        "first on sys.path) and restart on edits. Tracebacks are shown: development only.",
    )
    serve.add_argument("directory", nargs="?", default=".", metavar="DIR", help="default: .")
    serve.add_argument(
        "--publisher", metavar="MODULE:ROOT", help="serve this Directory (or class) instead"
    )
    serve.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1")
    serve.add_argument("--port", type=int, default=8000, help="default: 8000")
    serve.set_defaults(handler=_serve)


def _add_convert(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    convert = commands.add_parser(
        "convert",
        help="convert Quixote 3.x @ptl_html/@ptl_plain templates to this syntax, "
        "(--to-py) a .ptl module to plain Python, or (--from-jinja2, --from-django) "
        "Jinja2 or Django templates to PTL",
        description="Convert Quixote 3.x decorator-style PTL (@ptl_html, @ptl_plain, F'' "
        "h-strings, quixote.html imports) to def f [html] (...) templates, printing the "
        "result. Warnings (file:line:col) name literals whose meaning changes and what "
        "could not be converted: read them. With --to-py, turn a .ptl module into a "
        "plain .py module (@template functions, an explicit output list, t-strings "
        "through htmlformat; Python 3.14+ when it has t-strings) whose templates output "
        "exactly what the compiled .ptl does. With --from-jinja2 SRC or --from-django SRC "
        "--output DEST, convert a template file or every file under a folder into DEST "
        "(base.html becomes base.ptl); what cannot be converted is reported as "
        "file:line: construct: reason, written as a TODO that fails at render, and makes "
        "the exit status 1.",
    )
    convert.add_argument("files", nargs="*", metavar="FILE", help="a .ptl file")
    mode = convert.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite the files in place")
    mode.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if a file would change"
    )
    mode.add_argument(
        "--to-py",
        action="store_true",
        help="convert a .ptl module to plain Python (needs Python 3.12+ to run the conversion)",
    )
    for engine in ("jinja2", "django"):
        mode.add_argument(
            f"--from-{engine}",
            metavar="SRC",
            help=f"convert the {engine.capitalize()} template SRC, or every file under the "
            "folder SRC, into --output DEST",
        )
    convert.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="with --to-py and one FILE: write the module to OUT (default: print it); "
        "with --from-*: the folder to write into (or the .ptl file, for one template)",
    )
    convert.add_argument(
        "--autoescape",
        choices=("on", "off", "auto"),
        default="auto",
        help="with --from-*: which originals escaped their values (default auto: Jinja2 as "
        "Flask, .html .htm .xml .xhtml .svg files; Django, all); they become [html] "
        "templates, the others [plain]",
    )
    convert.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="with --from-*: skip the files whose name under SRC, or own name, matches "
        "(repeatable)",
    )
    convert.add_argument(
        "--filters",
        action="append",
        default=[],
        metavar="MODULE",
        help="with --from-*: a module defining the app's own filters, tests and globals "
        "(repeatable); the converted templates import them from it",
    )
    convert.add_argument(
        "--engine-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="with --from-jinja2: a setting of the app's Jinja2 environment that changes how "
        "templates read (trim_blocks=true, lstrip_blocks=true, keep_trailing_newline=true, "
        "block_start_string=..., line_statement_prefix=#, ...; repeatable)",
    )
    convert.add_argument(
        "--settings",
        metavar="MODULE",
        help="with --from-django: the project's settings module (DJANGO_SETTINGS_MODULE), "
        "so the tag libraries its templates load are known",
    )
    convert.set_defaults(handler=_convert)


def _ptl_files(paths: Sequence[str]) -> Iterator[str]:
    """Each PATH that is a file, and every .ptl file below each directory, sorted."""
    for path in paths:
        if not os.path.isdir(path):
            yield path
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            yield from (os.path.join(root, f) for f in sorted(files) if f.endswith(".ptl"))


def _location(exc: SyntaxError, path: str) -> str:
    return f"{path}:{exc.lineno or 1}:{exc.offset or 1}: {exc.msg}"


def _compile(args: argparse.Namespace) -> int:
    from ptl_wsgi.importer import precompile

    failed = 0
    for path in _ptl_files(args.paths):
        try:
            cache = precompile(path)
        except SyntaxError as exc:
            print(_location(exc, path), file=sys.stderr)
        except OSError as exc:
            print(f"{path}: cannot compile: {exc}", file=sys.stderr)
        else:
            if not args.quiet:
                print(f"{path} -> {cache}")
            continue
        failed += 1
    return 1 if failed else 0


def _check(args: argparse.Namespace) -> int:
    from ptl_wsgi.compiler import compile_ptl, concatenation_warnings, context_report, csp_report
    from ptl_wsgi.compiler.csp import blocks

    failed = 0
    for path in _ptl_files(args.paths):
        try:
            with open(path, "rb") as f:
                source = f.read()
            if args.contexts:
                for line, col, context, escaper in context_report(source, path):
                    how = f"escaper {escaper}" if escaper else "HTML escaping"
                    print(f"{path}:{line}:{col}: {context}: {how}")
            for line, col, message in concatenation_warnings(source, path):
                print(f"{path}:{line}:{col}: warning: {message}", file=sys.stderr)
            compile_ptl(source, path)
            if args.csp:
                blocked = 0
                for line, col, kind, message in csp_report(source, path):
                    level = "csp" if blocks(kind) else "csp warning"
                    print(f"{path}:{line}:{col}: {level}: {message}")
                    blocked += blocks(kind)
                if blocked:
                    failed += 1
                continue
        except SyntaxError as exc:
            print(_location(exc, path), file=sys.stderr)
        except OSError as exc:
            print(f"{path}: cannot read: {exc}", file=sys.stderr)
        else:
            continue
        failed += 1
    return 1 if failed else 0


def _csp_hashes(args: argparse.Namespace) -> int:
    from ptl_wsgi.compiler import inline_scripts
    from ptl_wsgi.csp import script_hash

    failed = 0
    for path in _ptl_files(args.paths):
        try:
            with open(path, "rb") as f:
                scripts = inline_scripts(f.read(), path)
        except SyntaxError as exc:
            print(_location(exc, path), file=sys.stderr)
        except OSError as exc:
            print(f"{path}: cannot read: {exc}", file=sys.stderr)
        else:
            for line, col, text in scripts:
                print(f"{script_hash(text)}  {path}:{line}:{col}")
            continue
        failed += 1
    return 1 if failed else 0


def _lint(args: argparse.Namespace) -> int:
    from ptl_wsgi.tools.lint import RuffNotFound, lint_file, ruff_command

    try:
        command = ruff_command()
    except RuffNotFound as exc:
        print(f"ptl-wsgi lint: {exc}", file=sys.stderr)
        return 2
    findings = 0
    for path in _ptl_files(args.paths):
        try:
            diagnostics = lint_file(path, command)
        except SyntaxError as exc:
            print(_location(exc, path), file=sys.stderr)
            findings += 1
        except OSError as exc:
            print(f"{path}: cannot read: {exc}", file=sys.stderr)
            findings += 1
        else:
            for diagnostic in diagnostics:
                print(diagnostic)
            findings += len(diagnostics)
    if findings:
        print(f"Found {findings} error{'s' if findings != 1 else ''}.", file=sys.stderr)
    return 1 if findings else 0


def _stubs(args: argparse.Namespace) -> int:
    from ptl_wsgi.tools.typecheck import write_stubs

    failed = 0
    for path in _ptl_files(args.paths):
        try:
            changed = write_stubs([path], check=args.check)
        except SyntaxError as exc:
            print(_location(exc, path), file=sys.stderr)
            failed += 1
        except OSError as exc:
            print(f"{path}: cannot read: {exc}", file=sys.stderr)
            failed += 1
        else:
            for stub in changed:
                if args.check:
                    print(f"{stub}: missing or out of date; run: ptl-wsgi stubs {path}")
                    failed += 1
                else:
                    print(f"wrote {stub}")
    return 1 if failed else 0


def _typecheck(args: argparse.Namespace) -> int:
    from ptl_wsgi.tools.typecheck import CheckerNotFound, typecheck

    paths = list(_ptl_files(args.paths))
    for path in paths:
        if not os.path.isfile(path):
            print(f"{path}: no such file", file=sys.stderr)
            return 2
    try:
        diagnostics = typecheck(paths, args.checker, args.root)
    except (CheckerNotFound, RuntimeError) as exc:  # RuntimeError: the checker itself failed
        print(f"ptl-wsgi typecheck: {exc}", file=sys.stderr)
        return 2
    except SyntaxError as exc:
        print(_location(exc, exc.filename or "<ptl>"), file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"ptl-wsgi typecheck: cannot read {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
    for diagnostic in diagnostics:
        print(diagnostic)
    errors = sum(1 for d in diagnostics if d.severity == "error")
    if errors:
        print(f"Found {errors} error{'s' if errors != 1 else ''}.", file=sys.stderr)
    return 1 if errors else 0


def _show(args: argparse.Namespace) -> int:
    import ast

    from ptl_wsgi.compiler import parse_ptl

    try:
        with open(args.file, "rb") as f:
            tree = parse_ptl(f.read(), args.file)
    except SyntaxError as exc:
        print(_location(exc, args.file), file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"{args.file}: cannot read: {exc}", file=sys.stderr)
        return 1
    print(ast.unparse(tree))
    return 0


def _render(args: argparse.Namespace) -> int:
    import json

    from ptl_wsgi.loader import Loader, TemplateArgumentError, TemplateNotFound, split_name

    path, function = split_name(args.template)
    try:
        if args.json_file == "-":
            context = json.load(sys.stdin)
        elif args.json_file:
            with open(args.json_file, encoding="utf-8") as f:
                context = json.load(f)
        else:
            context = json.loads(args.json or "{}")
    except (OSError, ValueError) as exc:
        print(f"{args.json_file or '--json'}: {exc}", file=sys.stderr)
        return 1
    if not isinstance(context, dict):
        print(f"{path}:1:1: the JSON arguments must be an object", file=sys.stderr)
        return 1
    directory, filename = os.path.split(os.path.abspath(path))
    if args.root:
        directory = os.path.abspath(args.root)
        filename = os.path.relpath(os.path.abspath(path), directory).replace(os.sep, "/")
        if filename.startswith("../"):
            print(f"{path}:1:1: not under --root {args.root}", file=sys.stderr)
            return 1
    loader = Loader([directory])
    try:
        output = loader.render(f"{filename}:{function}", context)
    except SyntaxError as exc:
        print(_location(exc, exc.filename or path), file=sys.stderr)
        return 1
    except TemplateNotFound as exc:
        print(f"{path}:1:1: {exc.reason or exc}", file=sys.stderr)
        return 1
    except TemplateArgumentError as exc:
        line = loader.get_template(f"{filename}:{function}").function.__code__.co_firstlineno
        print(f"{path}:{line}:1: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        print(_traceback_location(exc, path), file=sys.stderr)
        return 1
    finally:
        loader.close()
    print(output)
    return 0


def _traceback_location(exc: BaseException, path: str) -> str:
    """``file:line:col: Type: message`` at the innermost frame in a .ptl file."""
    import traceback

    from ptl_wsgi.tracebacks import template_frame

    frame = template_frame(exc.__traceback__)
    if frame is None:  # raised before any template ran: the innermost frame of all
        frames = traceback.extract_tb(exc.__traceback__)
        frame = frames[-1] if frames else None
    where = f"{path}:1:1"
    if frame is not None:
        # The file as the user named it, when the error is in that file.
        file = path if frame.filename == os.path.abspath(path) else frame.filename
        where = f"{file}:{frame.lineno}:{(getattr(frame, 'colno', None) or 0) + 1}"
    return f"{where}: {type(exc).__name__}: {exc}"


def _serve(args: argparse.Namespace) -> int:
    from werkzeug.serving import run_simple

    from ptl_wsgi import devserver

    if args.publisher:
        try:
            app = devserver.publisher_app(args.publisher, args.directory)
        except (ImportError, AttributeError, TypeError, ValueError, SyntaxError) as exc:
            print(f"{args.publisher}: {exc}", file=sys.stderr)
            return 1
    elif os.path.isdir(args.directory):
        app = devserver.template_app(args.directory)
    else:
        print(f"{args.directory}: not a directory", file=sys.stderr)
        return 1
    # The publisher's modules are ordinary imports: a restart is the only clean reload.
    run_simple(
        args.host,
        args.port,
        app,
        use_reloader=bool(args.publisher),
        reloader_type="stat",
        threaded=True,
    )
    return 0


def _convert(args: argparse.Namespace) -> int:
    import tokenize

    from ptl_wsgi.tools.from_quixote import convert_source

    engine = "jinja2" if args.from_jinja2 else "django" if args.from_django else None
    if engine is not None:
        return _convert_from(engine, args)
    if not args.files:
        print("ptl-wsgi convert: give FILE, or --from-jinja2/--from-django SRC", file=sys.stderr)
        return 2
    if args.to_py:
        return _convert_to_py(args)
    if args.output is not None:
        print("ptl-wsgi convert: -o/--output goes with --to-py", file=sys.stderr)
        return 2
    status = 0
    for path in args.files:
        try:
            with open(path, "rb") as f:
                encoding, _ = tokenize.detect_encoding(f.readline)
            with open(path, encoding=encoding, newline="") as f:
                result = convert_source(f.read(), path)
        except SyntaxError as exc:
            print(_location(exc, path), file=sys.stderr)
            status = 1
            continue
        except (OSError, UnicodeDecodeError) as exc:
            print(f"{path}: cannot read: {exc}", file=sys.stderr)
            status = 1
            continue
        for problem in result.warnings:
            print(
                f"{path}:{problem.line}:{problem.col}: warning: {problem.message}", file=sys.stderr
            )
        if args.check:
            if result.changed:
                print(f"{path}: would be converted", file=sys.stderr)
                status = 1
        elif args.write:
            if result.changed:
                with open(path, "w", encoding=encoding, newline="") as f:
                    f.write(result.source)
                print(f"{path}: converted", file=sys.stderr)
        else:
            if len(args.files) > 1:
                print(f"# ==> {path} <==")
            sys.stdout.write(result.source)
    return status


def _convert_from(engine: str, args: argparse.Namespace) -> int:
    from ptl_wsgi.tools.converting import main as convert_templates

    if args.files or args.output is None:
        print(
            f"ptl-wsgi convert: --from-{engine} SRC takes --output DEST and no FILE",
            file=sys.stderr,
        )
        return 2
    if args.settings:
        if engine != "django":
            print("ptl-wsgi convert: --settings goes with --from-django", file=sys.stderr)
            return 2
        os.environ["DJANGO_SETTINGS_MODULE"] = args.settings
    return convert_templates(
        engine,
        args.from_jinja2 or args.from_django,
        args.output,
        autoescape=args.autoescape,
        exclude=args.exclude,
        filters=args.filters,
        options=args.engine_option,
    )


def _convert_to_py(args: argparse.Namespace) -> int:
    import io
    import tokenize

    if args.output is not None and len(args.files) != 1:
        print("ptl-wsgi convert: -o/--output takes one FILE", file=sys.stderr)
        return 2
    if sys.version_info < (3, 12):
        print("ptl-wsgi convert --to-py: needs Python 3.12 or later", file=sys.stderr)
        return 2
    # (ignore: mypy, as Python 3.10, flags code after a version check's exit: mypy#10773;
    # unused when it checks as 3.12+)
    from ptl_wsgi.tools.to_py import to_python  # type: ignore[unreachable, unused-ignore]

    status = 0
    for path in args.files:
        try:
            with open(path, "rb") as f:
                source = f.read()
            encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
            result = to_python(source, path)
        except SyntaxError as exc:
            print(_location(exc, path), file=sys.stderr)
            status = 1
            continue
        except (OSError, UnicodeDecodeError) as exc:
            print(f"{path}: cannot read: {exc}", file=sys.stderr)
            status = 1
            continue
        if result.problems:
            for problem in result.problems:
                where = f"{path}:{problem.line}:{problem.col}"
                print(f"{where}: error: {problem.message}", file=sys.stderr)
            print(f"{path}: not converted", file=sys.stderr)
            status = 1
        elif args.output is not None:
            if os.path.exists(args.output) and os.path.samefile(args.output, path):
                print(f"{path}: -o names the file itself", file=sys.stderr)
                return 2
            try:
                with open(args.output, "w", encoding=encoding, newline="") as f:
                    f.write(result.source)
            except (OSError, UnicodeEncodeError) as exc:
                print(f"{args.output}: cannot write: {exc}", file=sys.stderr)
                return 1
            print(f"{path}: converted to {args.output}", file=sys.stderr)
        else:
            if len(args.files) > 1:
                print(f"# ==> {path} <==")
            sys.stdout.write(result.source)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        print(version_text())
        return 0
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    return int(handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
