from __future__ import annotations

import pytest

from kfdefaults import cache as _cache
from kfdefaults.layers import EntryPointSource, layer_sources
from kfdefaults.settings import flag


@pytest.mark.parametrize("value", ["", " ", "0", "false", "False", "NO", "off", "n", "f"])
def test_values_that_leave_a_flag_off(value):
    assert flag("X", {"X": value}) is False


@pytest.mark.parametrize("value", ["1", "true", "yes", "on", "Y", "anything"])
def test_values_that_turn_a_flag_on(value):
    assert flag("X", {"X": value}) is True


def test_an_unset_flag_is_off():
    assert flag("X", {}) is False


def test_no_cache_false_keeps_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("KFDEFAULTS_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("KFDEFAULTS_NO_CACHE", "false")
    assert _cache.cache_dir() == str(tmp_path)
    monkeypatch.setenv("KFDEFAULTS_NO_CACHE", "true")
    assert _cache.cache_dir() is None


def test_no_entry_points_no_keeps_entry_points():
    def reads_entry_points(value: str) -> bool:
        sources = layer_sources((), (), environ={"KFDEFAULTS_NO_ENTRY_POINTS": value}, pyproject=False)
        return any(isinstance(s, EntryPointSource) for s in sources["platform"])

    assert reads_entry_points("no") and reads_entry_points("0")
    assert not reads_entry_points("1") and not reads_entry_points("yes")
