"""Settings: precedence, and a located one-line exit 2 for every bad value."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_cli
from tfdist_validate.errors import UsageError
from tfdist_validate.options import OPTIONS
from tfdist_validate.settings import Settings, resolve


def write(tmp_path: Path, text: str, name: str = "config.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def usage_error(cli: dict[str, str], env: dict[str, str] | None = None) -> str:
    with pytest.raises(UsageError) as err:
        resolve(cli, env or {})
    return str(err.value)


def test_defaults() -> None:
    s = resolve({}, {})
    assert (s.min_gpus, s.epochs, s.per_replica_batch, s.min_val_accuracy, s.timeout) == (
        2,
        3,
        16,
        0.9,
        600.0,
    )
    assert s.devices is None and s.cpu_replicas is None and s.root == "/"
    assert set(s.sources.values()) == {"default"}


def test_precedence_cli_over_env_over_file_over_default(tmp_path: Path) -> None:
    cfg = write(tmp_path, "min_gpus: 3\nepochs: 5\nper_replica_batch: 8\n")
    s = resolve({"config": cfg, "min_gpus": "7"}, {"TFDIST_MIN_GPUS": "6", "TFDIST_EPOCHS": "4"})
    assert (s.min_gpus, s.epochs, s.per_replica_batch, s.timeout) == (7, 4, 8, 600.0)
    assert s.sources["min_gpus"] == "--min-gpus"
    assert s.sources["epochs"] == "TFDIST_EPOCHS"
    assert s.sources["per_replica_batch"] == f"{cfg}:3"


def test_config_file_from_env(tmp_path: Path) -> None:
    cfg = write(tmp_path, "devices: [0, '/gpu:1']\nfail_on_health: true\n")
    s = resolve({}, {"TFDIST_CONFIG": cfg})
    assert s.devices == ("/gpu:0", "/gpu:1") and s.fail_on_health is True


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("min_gpus: [1\n", ":2: not valid YAML"),  # unclosed flow sequence, found at end of input
        ("epochs: 3\n  bad: indent\n", ":2: not valid YAML"),
        ("min_gpus: 2\nmin_gpu: 4\n", ":2: unknown setting 'min_gpu' (did you mean 'min_gpus'?)"),
        ("epochs: 3\nmin_gpus: two\n", ":2: min_gpus: 'two' is not allowed; expected an integer"),
        ("min_gpus: true\n", ":1: min_gpus: True is not allowed"),
        ("timeout: '60'\n", ":1: timeout: '60' is not allowed; expected a number"),
        ("- min_gpus\n", ":1: expected a mapping of settings"),
        ("epochs: 3\nepochs: 4\n", ":2: 'epochs' is set twice (first at "),
        ("config: other.yaml\n", ":1: unknown setting 'config'"),
    ],
)
def test_bad_config_file_is_located(tmp_path: Path, text: str, expected: str) -> None:
    cfg = write(tmp_path, text)
    message = usage_error({"config": cfg})
    assert message.startswith(cfg + ":")
    assert expected in message
    assert "\n" not in message


def test_empty_config_file_sets_nothing(tmp_path: Path) -> None:
    assert resolve({"config": write(tmp_path, "# nothing yet\n")}, {}).min_gpus == 2


def test_missing_config_file_names_the_source() -> None:
    assert usage_error({}, {"TFDIST_CONFIG": "/nonexistent/x.yaml"}).startswith(
        "TFDIST_CONFIG: cannot read '/nonexistent/x.yaml'"
    )


def test_unknown_environment_setting_is_an_error() -> None:
    assert "TFDIST_MIN_GPU: unknown setting" in usage_error({}, {"TFDIST_MIN_GPU": "4"})


def test_env_abc_exits_2_with_one_line_and_no_traceback() -> None:
    result = run_cli(["check"], {"TFDIST_MIN_GPUS": "abc"})
    assert result.code == 2
    assert result.stderr == (
        "tfdist-validate: error: TFDIST_MIN_GPUS: min_gpus: 'abc' is not allowed;"
        " expected an integer from 1 to 1024\n"
    )
    assert result.stdout == ""


def test_broken_yaml_through_the_cli(tmp_path: Path) -> None:
    cfg = write(tmp_path, "min_gpus: 2\ndevices: [0, 1\n")
    result = run_cli(["run", "--config", cfg])
    assert result.code == 2
    assert result.stderr.startswith(f"tfdist-validate: error: {cfg}:3: not valid YAML")
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr


def test_unknown_flag_is_one_line() -> None:
    result = run_cli(["check", "--min-gpu", "2"])
    assert result.code == 2
    assert len(result.stderr.splitlines()) == 1 and "--min-gpu" in result.stderr


# one out-of-range (or malformed) value per option, through every source that can carry it
BAD_VALUES = {
    "min_gpus": "0",
    "devices": "/tpu:0",
    "cpu_replicas": "65",
    "epochs": "0",
    "per_replica_batch": "-1",
    "min_val_accuracy": "1.5",
    "timeout": "0",
    "json": " ",
    "termination_log": "",
    "root": "/nonexistent/root",
    "min_workers": "0",
    "allreduce_mib": "-64",
    "min_busbw_gbps": "nan",
    "cross_device_ops": "ring",
    "fail_on_health": "maybe",
    "verbose": "very",
}


def test_every_option_has_a_bad_value_case() -> None:
    assert set(BAD_VALUES) == {o.name for o in OPTIONS}


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o.name)
def test_out_of_range_from_environment(option) -> None:  # type: ignore[no-untyped-def]
    message = usage_error({}, {option.env: BAD_VALUES[option.name]})
    assert message.startswith(f"{option.env}: {option.name}: ")
    assert "expected" in message


@pytest.mark.parametrize("option", [o for o in OPTIONS if not o.switch], ids=lambda o: o.name)
def test_out_of_range_from_command_line(option) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(["check", f"{option.flag}={BAD_VALUES[option.name]}"])
    assert result.code == 2
    assert result.stderr.startswith(f"tfdist-validate: error: {option.flag}: {option.name}: ")
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o.name)
def test_out_of_range_from_config_file(tmp_path: Path, option) -> None:  # type: ignore[no-untyped-def]
    import yaml

    raw = BAD_VALUES[option.name]
    value = yaml.safe_load(raw) if raw.strip() and option.name not in ("json", "root", "devices") else raw
    cfg = write(tmp_path, f"# one bad value\n{option.name}: {yaml.safe_dump(value).splitlines()[0]}\n")
    message = usage_error({"config": cfg})
    assert message.startswith(f"{cfg}:2: {option.name}: ")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0,1", ("/gpu:0", "/gpu:1")),
        ("/gpu:0, /GPU:1", ("/gpu:0", "/GPU:1")),
        ("/device:GPU:3", ("/device:GPU:3",)),
    ],
)
def test_devices_forms(text: str, expected: tuple[str, ...]) -> None:
    assert resolve({"devices": text}, {}).devices == expected


def test_duplicate_devices_rejected() -> None:
    assert "each once" in usage_error({"devices": "0,/gpu:0"})


def test_settings_has_one_field_per_option_with_the_tables_default() -> None:
    import dataclasses

    from tfdist_validate.options import OPTIONS

    fields = {f.name for f in dataclasses.fields(Settings)} - {"config", "sources"}
    assert fields == {o.name for o in OPTIONS}
    assert all(getattr(Settings(), o.name) == o.default for o in OPTIONS)
