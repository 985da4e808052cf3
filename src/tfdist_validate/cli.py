"""The command line: `tfdist-validate [run|check|diagnose|bundle|replay|...] ...`; main() -> int."""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import json
import os
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from tfdist_validate import TOOL_NAME, __version__, exitcodes
from tfdist_validate.errors import Terminated, UsageError
from tfdist_validate.exitcodes import ExitCode
from tfdist_validate.options import BY_NAME, CONFIG_ENV, OPTIONS
from tfdist_validate.signals import stop_signals_raise

COMMANDS = ("run", "check", "diagnose", "bundle", "replay", "exit-codes", "schema")


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

    replay = sub.add_parser(
        "replay", help="decide a recorded report's verdict again from its facts (report.json or a bundle)"
    )
    replay.add_argument(
        "file", metavar="FILE", help="report.json written by run / check, or a bundle .tar.gz"
    )
    _add_validation_options(replay)

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


def _cmd_replay(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from tfdist_validate import replay, settings

    given = {o.name: getattr(args, o.name) for o in OPTIONS if getattr(args, o.name) is not None}
    if args.config is not None:
        given["config"] = args.config
    return replay.run(args.file, settings.resolve(given, env), env)


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

    stdin = getattr(sys.stdin, "buffer", None)
    if args.file == "-" and stdin is None:  # started with stdin closed (`<&-`)
        raise UsageError("diagnose: standard input is closed; give the log as FILE")
    return command.run(args.file, args.json, stdin or io.BytesIO(), sys.stdout)


def _cmd_bundle(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    from tfdist_validate import bundle, settings

    given = {name: getattr(args, name) for name in _BUNDLE_OPTIONS if getattr(args, name) is not None}
    settings.resolve(given, {})  # what was typed on this command line must be right: exit 2 otherwise
    # A bad TFDIST_* value is exactly when a user needs a bug report: it is recorded in the bundle, and the
    # validation the bundle runs goes on without it.
    bad = settings.invalid_environment(env)
    resolved = settings.resolve(given, {k: v for k, v in env.items() if k not in bad})
    options = bundle.BundleOptions(
        output=args.output,
        root=resolved.root,
        timeout=resolved.timeout,
        cpu_replicas=resolved.cpu_replicas,
        with_smoke=args.with_smoke,
        anonymize=not args.no_anonymize,
        invalid_environment=bad,
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
    "replay": _cmd_replay,
    "exit-codes": _cmd_exit_codes,
    "schema": _cmd_schema,
}


def _say(line: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # stderr itself may be closed or full
        print(f"{TOOL_NAME}: {line}", file=sys.stderr, flush=True)


def _flush_stdout() -> None:
    """Output is block-buffered into a pipe or file: a full disk shows up here, not at print(). Afterwards
    stdout points at /dev/null, so the interpreter's own flush at exit cannot print a traceback."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError) as err:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise UsageError(
            f"cannot write to standard output: {getattr(err, 'strerror', None) or err}"
        ) from None


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    environ = dict(os.environ if env is None else env)
    try:
        with stop_signals_raise():
            args = build_parser().parse_args(_with_default_command(sys.argv[1:] if argv is None else argv))
            code = int(_HANDLERS[args.command](args, environ))
            _flush_stdout()
            return code
    except UsageError as err:
        _say(f"error: {err}")
        return ExitCode.USAGE
    except SystemExit as done:  # --help and --version
        return done.code if isinstance(done.code, int) else ExitCode.USAGE
    except (KeyboardInterrupt, Terminated) as stop:  # before a run could take it over, or in another command
        _say(f"stopped by {'SIGINT' if isinstance(stop, KeyboardInterrupt) else stop}; nothing was finished")
        return ExitCode.TIMEOUT
    except OSError as err:
        if err.errno in (errno.EPIPE, errno.ENOSPC, errno.EIO, errno.EBADF):  # our output went nowhere
            with contextlib.suppress(OSError, ValueError, AttributeError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            _say(f"error: cannot write the output: {err.strerror or err}")
            return ExitCode.USAGE
        return _internal_error(err)
    except Exception as err:  # the contract: exit 1 comes with one line, never a bare traceback
        return _internal_error(err)


def _internal_error(err: BaseException) -> int:
    where = traceback.extract_tb(err.__traceback__)[-1:] if err.__traceback__ else []
    at = f" (at {Path(where[0].filename).name}:{where[0].lineno})" if where else ""
    _say(
        f"internal error: {type(err).__name__}: {str(err)[:300]}{at}; report it with `tfdist-validate bundle`"
    )
    return ExitCode.INTERNAL_ERROR
