"""YAML 1.2 exponent floats (``1e3``, ``1E-3``, ``+1e3``, ``.5e2``) are numbers in fabricui's
YAML inputs, as YAML 1.2 and most tools read them; PyYAML's YAML 1.1 rules would make them
text ("expected a number (got '1e308')"). The global ``yaml`` loaders are left alone, and
everything that parsed before parses the same."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from _records import LINK

from fabricui.hwdb.yamlfile import YamlFloat, parse_yaml

ROOT = Path(__file__).resolve().parents[2]


def load(text: str) -> object:
    return parse_yaml(text, "test.yaml").data


@pytest.mark.parametrize(
    ("written", "number"),
    [
        ("1e3", 1000.0),
        ("1E3", 1000.0),
        ("1e-3", 0.001),
        ("1E-3", 0.001),
        ("+1e3", 1000.0),
        ("-1e3", -1000.0),
        (".5e2", 50.0),
        ("-.5E+2", -50.0),
        ("1.e3", 1000.0),
        ("2.5e2", 250.0),
        ("1e308", 1e308),
        ("0e0", 0.0),
    ],
)
def test_exponent_forms_are_numbers(written: str, number: float):
    value = load(f"x: {written}\n")["x"]  # type: ignore[index]
    assert isinstance(value, float) and value == number
    assert isinstance(value, YamlFloat) and value.text == written


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("'1e3'", "1e3"),  # quoted: text, always
        ('"1E-3"', "1E-3"),
        ("1e3x", "1e3x"),  # not a number at all
        ("e3", "e3"),
        ("1e", "1e"),
        ("1e3.5", "1e3.5"),
        ("0x1e3", 0x1E3),  # hexadecimal int, as before
        ("12", 12),
        ("1_000", 1000),
        ("1.5", 1.5),
        ("1.0e+3", 1000.0),  # YAML 1.1's own float form: a plain float, as before
        (".inf", math.inf),
        ("true", True),
        ("1:30", 90),  # YAML 1.1 sexagesimal int, as before
    ],
)
def test_other_scalars_read_as_before(written: str, expected: object):
    value = load(f"x: {written}\n")["x"]  # type: ignore[index]
    assert value == expected and type(value) is type(expected)
    assert value == yaml.safe_load(f"x: {written}\n")["x"]


def test_global_yaml_state_is_untouched():
    """The process's own safe loaders keep YAML 1.1's rules (other code, plugins)."""
    assert yaml.safe_load("x: 1e3\n") == {"x": "1e3"}
    assert yaml.load("x: 1e3\n", Loader=yaml.SafeLoader) == {"x": "1e3"}
    if hasattr(yaml, "CSafeLoader"):
        assert yaml.load("x: 1e3\n", Loader=yaml.CSafeLoader) == {"x": "1e3"}


def test_a_number_too_big_for_a_float_is_still_refused():
    """``1e309`` overflows to infinity: the schema's 'expected a finite number'."""
    value = load("x: 1e309\n")["x"]  # type: ignore[index]
    assert value == math.inf and not isinstance(value, YamlFloat)


def test_every_shipped_and_test_yaml_file_reads_as_before():
    """Each YAML file of the repository gives the same data as ``yaml.safe_load``: no
    existing input holds an exponent number that used to be text."""
    files = [
        *(ROOT / "hwdb").rglob("*.yaml"),
        *(ROOT / "plugins").rglob("*.yaml"),
        *(ROOT / "tests" / "data").rglob("*.yaml"),
    ]
    assert len(files) > 20
    for path in files:
        text = path.read_text(encoding="utf-8")
        try:
            expected = yaml.safe_load(text)
        except yaml.YAMLError:
            continue  # a deliberately broken fixture
        assert parse_yaml(text, str(path)).data == expected, path


def test_record_fields_take_exponent_numbers(run_cli, tmp_path: Path):
    """``bw_GBps: 1e3`` and ``lat_us: 3E-1`` validate; an id written ``1e3`` stays ``1e3``."""
    (tmp_path / "links.yaml").write_text(LINK.format(id="1e3", bw="1e3", lat="3E-1"))
    status, out, err = run_cli("hwdb", "validate", str(tmp_path))
    assert status == 0, err
    status, out, err = run_cli("--hwdb", str(tmp_path), "hwdb", "show", "1e3", "--json")
    assert status == 0, err
    assert '"id": "1e3"' in out and '"bw_GBps": 1000.0' in out and '"lat_us": 0.3' in out


@pytest.mark.parametrize(
    ("bw", "message"),
    [
        ("1e308", "bw_GBps: number too large"),
        ("1e309", "bw_GBps: expected a finite number"),
        ("-1e3", "bw_GBps: must not be negative"),
    ],
)
def test_out_of_range_exponent_numbers_are_range_errors(
    run_cli, tmp_path: Path, bw: str, message: str
):
    """Read as numbers, they fail the range checks in one line, never 'expected a number'."""
    (tmp_path / "links.yaml").write_text(LINK.format(id="x1", bw=bw, lat="0.3"))
    status, out, err = run_cli("hwdb", "validate", str(tmp_path))
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert message in err and "expected a number" not in err
