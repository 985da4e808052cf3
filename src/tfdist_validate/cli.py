"""The command line: `tfdist-validate [run|check|diagnose|bundle|exit-codes|schema] ...`. main() -> int."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from tfdist_validate import TOOL_NAME, __version__, exitcodes
from tfdist_validate.errors import UsageError
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.options import BY_NAME, CONFIG_ENV, OPTIONS

COMMANDS = ("run", "check", "diagnose", "bundle", "exit-codes", "schema")


class _Parser(argparse.ArgumentParser):
    """argparse prints usage plus an error over two lines and exits; we want one line and exit 2, our way."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # No prefix matching: `--min-gpu` is a typo to report, not a silent alias of `--min-gpus`.
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see --help)")


def _add_validation_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", metavar="FILE", help=f"YAML file with the same settings (env {CONFIG_ENV})"
    )
    for option in OPTIONS:
        help_text = f"{option.help} (env {option.env}; default {option.default})"
        flags = [option.short, option.flag] if option.short else [option.flag]
        if option.switch:
            parser.add_argument(*flags, dest=option.name, action="store_const", const="true", help=help_text)
        else:
            parser.add_argument(*flags, dest=option.name, metavar=option.metavar, help=help_text)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=TOOL_NAME,
        description="Can synchronized multi-GPU TensorFlow training run here? Checks each layer.",
        epilog="Exit codes: `tfdist-validate exit-codes`. Without a command, `run` is assumed.",
    )
    parser.add_argument("--version", action="version", version=f"{TOOL_NAME} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    run = sub.add_parser("run", help="full validation ending with the MirroredStrategy smoke test (default)")
    _add_validation_options(run)
    check = sub.add_parser(
        "check", help="the fast layers only: runtime, driver, TensorFlow's view of the GPUs"
    )
    _add_validation_options(check)

    diagnose = sub.add_parser(
        "diagnose", help="name the known causes in a TensorFlow / CUDA / NCCL / docker log"
    )
    diagnose.add_argument("file", nargs="?", default="-", help="log file, or - for stdin (default)")
    diagnose.add_argument("--json", action="store_true", help="machine-readable output")

    bundle = sub.add_parser("bundle", help="write a reproducible bug report (.tar.gz)")
    bundle.add_argument("-o", "--output", metavar="FILE", help="where to write the .tar.gz")
    bundle.add_argument("--with-smoke", action="store_true", help="also run the smoke test")
    bundle.add_argument("--no-anonymize", action="store_true", help="keep GPU UUIDs and the hostname")
    for name in _BUNDLE_OPTIONS:
        option = BY_NAME[name]
        bundle.add_argument(
            option.flag, dest=name, metavar=option.metavar, help=f"{option.help} (env {option.env})"
        )

    codes = sub.add_parser("exit-codes", help="print the exit-code table")
    codes.add_argument("--json", action="store_true", help='a list of {"code", "name", "meaning"}')

    sub.add_parser("schema", help="print the JSON Schema of the report")
    return parser


# The run / check options that make sense for a bug report (passed on to the `check` it runs).
_BUNDLE_OPTIONS = ("root", "timeout", "cpu_replicas")


def _with_default_command(argv: Sequence[str]) -> list[str]:
    args = list(argv)
    if not args or (args[0].startswith("-") and args[0] not in ("-h", "--help", "--version")):
        return ["run", *args]
    return args


def _cmd_validate(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from tfdist_validate import app, settings  # the heavy path; exit-codes and schema stay instant

    given = {o.name: getattr(args, o.name) for o in OPTIONS if getattr(args, o.name) is not None}
    if args.config is not None:
        given["config"] = args.config
    resolved = settings.resolve(given, env)
    return app.execute(args.command, resolved, env)


def _cmd_exit_codes(args: argparse.Namespace, _env: Mapping[str, str]) -> int:
    if args.json:
        print(json.dumps(exitcodes.as_json_list(), indent=2))
    else:
        print(exitcodes.as_text_table())
    return ExitCode.OK


def _cmd_schema(_args: argparse.Namespace, _env: Mapping[str, str]) -> int:
    from tfdist_validate.report.schema import SCHEMA

    print(json.dumps(SCHEMA, indent=2))
    return ExitCode.OK


def _cmd_diagnose(args: argparse.Namespace, _env: Mapping[str, str]) -> int:
    from tfdist_validate.diagnose import command

    return command.run(args.file, args.json, sys.stdin.buffer, sys.stdout)


def _cmd_bundle(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from tfdist_validate import bundle, settings

    given = {name: getattr(args, name) for name in _BUNDLE_OPTIONS if getattr(args, name) is not None}
    resolved = settings.resolve(given, env)  # validates the values (and their TFDIST_* twins): exit 2
    options = bundle.BundleOptions(
        output=args.output,
        root=resolved.root,
        timeout=resolved.timeout,
        cpu_replicas=resolved.cpu_replicas,
        with_smoke=args.with_smoke,
        anonymize=not args.no_anonymize,
    )
    path = bundle.make_bundle(options, env)
    print(f"{TOOL_NAME}: wrote {path} (attach it to the issue; paste its REPORT.md)", file=sys.stderr)
    print(path)
    return ExitCode.OK


_HANDLERS: dict[str, Callable[[argparse.Namespace, Mapping[str, str]], int]] = {
    "run": _cmd_validate,
    "check": _cmd_validate,
    "diagnose": _cmd_diagnose,
    "bundle": _cmd_bundle,
    "exit-codes": _cmd_exit_codes,
    "schema": _cmd_schema,
}


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    environ = dict(os.environ if env is None else env)
    try:
        args = build_parser().parse_args(_with_default_command(sys.argv[1:] if argv is None else argv))
        return int(_HANDLERS[args.command](args, environ))
    except UsageError as err:
        print(f"{TOOL_NAME}: error: {err}", file=sys.stderr)
        return ExitCode.USAGE
    except SystemExit as done:  # --help and --version
        return done.code if isinstance(done.code, int) else ExitCode.USAGE
    except KeyboardInterrupt:
        print(f"{TOOL_NAME}: interrupted", file=sys.stderr)
        return ExitCode.TIMEOUT
