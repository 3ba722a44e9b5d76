"""memoryapp.envconf: strict readers of settings from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from memoryapp import envconf


@pytest.mark.parametrize(
    ("raw", "value"), [("true", True), ("TRUE", True), ("false", False), ("False", False)]
)
def test_it_reads_a_boolean(monkeypatch: pytest.MonkeyPatch, raw: str, value: bool) -> None:
    monkeypatch.setenv("FLAG", raw)

    assert envconf.env_bool("FLAG", not value) is value


@pytest.mark.parametrize("raw", ["1", "0", "yes", "no", "on", "flase", " true"])
def test_it_refuses_a_boolean_that_is_not_true_or_false(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("FLAG", raw)

    with pytest.raises(ImproperlyConfigured) as caught:
        envconf.env_bool("FLAG", True)

    assert str(caught.value) == f"FLAG must be true or false, got {raw!r}"


def test_it_takes_the_default_when_unset_or_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLAG", raising=False)
    monkeypatch.setenv("COUNT", "")

    assert (envconf.env_bool("FLAG", True), envconf.env_int("COUNT", 7)) == (True, 7)


def test_it_reads_numbers_and_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COUNT", "42")
    monkeypatch.setenv("PRICE", "0.25")
    monkeypatch.setenv("HOSTS", " a.example, ,b.example ")

    assert (
        envconf.env_int("COUNT", 0),
        envconf.env_float("PRICE", 0.0),
        envconf.env_list("HOSTS", []),
    ) == (42, 0.25, ["a.example", "b.example"])


@pytest.mark.parametrize(("reader", "raw"), [(envconf.env_int, "4x"), (envconf.env_float, "cheap")])
def test_it_refuses_a_number_that_is_not_one(
    monkeypatch: pytest.MonkeyPatch, reader: object, raw: str
) -> None:
    monkeypatch.setenv("N", raw)

    with pytest.raises(ImproperlyConfigured):
        reader("N", 0)  # type: ignore[operator]


def test_it_reads_a_secret_from_its_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n", encoding="utf-8")
    monkeypatch.setenv("SECRET_KEY", "from-env")
    monkeypatch.setenv("SECRET_KEY_FILE", str(secret))

    assert envconf.env_str("SECRET_KEY") == "s3cret"
