"""The catalog finds a profile's files by name without listing a folder, and answers as a full listing does."""

from __future__ import annotations

import os

import pytest

from kfdefaults.layers import Catalog, Folder
from kfdefaults.layers import catalog as catalog_module
from kfdefaults.pipeline import Pipeline
from kfdefaults.check.folders import empty_folder_warnings

NAMES = ["a", "b", "c", "dup", "link", "broken", "dir", "pyproject", "_cluster-template", "Upper", "upper", "x-1",
         "missing", "hidden", ".hidden", "a.b", ""]


def make_folders(tmp_path) -> dict[str, list[Folder]]:
    """Two platform folders and a team folder holding what a layer folder may hold: every suffix, a name in two
    suffixes and in two folders, links (working and broken), a folder named like a profile, files that are not
    profiles, a hidden file, a name in capitals, an empty folder."""
    one, two, team, empty = (tmp_path / n for n in ("one", "two", "team", "empty"))
    for folder in (one, two, team, empty):
        folder.mkdir()
    for folder, names in ((one, ["a.yaml", "b.toml", "dup.yaml", "dup.yml", "Upper.yaml", "x-1.yaml", "a.b.yaml",
                                 "_cluster-template.yaml", "pyproject.toml", ".hidden.yaml", "notes.txt"]),
                          (two, ["a.yml", "c.yaml"]), (team, ["a.toml", "pyproject.yaml"])):
        for name in names:
            (folder / name).write_text("description: x\n", encoding="utf-8")
    os.symlink(one / "a.yaml", two / "link.yaml")
    os.symlink(tmp_path / "nowhere.yaml", two / "broken.yaml")
    (team / "dir.yaml").mkdir()
    return {"builtin": [], "platform": [Folder(str(one), "platform", "--platform"), Folder(str(two), "platform", "X"),
                                        Folder(str(empty) + "/", "platform", "--platform")],
            "team": [Folder(str(team), "team", "--team")]}


def listed(folders) -> Catalog:
    catalog = Catalog(folders)
    catalog.index()
    return catalog


def test_a_name_is_found_as_the_listing_finds_it(tmp_path):
    folders = make_folders(tmp_path)
    full = listed(folders)
    for name in NAMES:
        looked_up = Catalog(folders)  # a name that is not a profile name lists every folder: a catalog each
        for layer in ("builtin", "platform", "team", "task"):
            assert looked_up.files(name, layer) == full.files(name, layer), (name, layer)
            for file in looked_up.files(name, layer):
                assert looked_up.folder_of(file) == full.folder_of(file)
                assert looked_up.origin_of[file] == full.origin_of[file]
        assert looked_up.layers_defining(name) == full.layers_defining(name)
    assert looked_up.files("dup", "platform") == [str(tmp_path / "one" / "dup.yaml"), str(tmp_path / "one" / "dup.yml")]
    assert looked_up.files("a", "platform") == [str(tmp_path / "one" / "a.yaml"), str(tmp_path / "two" / "a.yml")]


def test_profile_names_are_looked_up_without_listing_a_folder(tmp_path, monkeypatch):
    catalog = Catalog(make_folders(tmp_path))
    monkeypatch.setattr(catalog_module.os, "scandir", lambda path: pytest.fail(f"listed {path}"))
    assert catalog.files("c", "platform") == [str(tmp_path / "two" / "c.yaml")]
    assert catalog.files("missing", "team") == []
    assert catalog.files("pyproject", "team") == [str(tmp_path / "team" / "pyproject.yaml")]


def test_a_case_insensitive_file_system_is_answered_by_the_listing(tmp_path, monkeypatch):
    """Where ``upper.yaml`` answers for ``Upper.yaml`` the lookup cannot tell the name as written: it lists."""
    folders = make_folders(tmp_path)
    lexists = os.path.lexists

    def case_blind(path):
        folder, name = os.path.split(path)
        return any(entry.lower() == name.lower() for entry in os.listdir(folder)) if os.path.isdir(folder) else lexists(path)

    monkeypatch.setattr(catalog_module.os.path, "lexists", case_blind)
    catalog = Catalog(folders)
    assert catalog.files("upper", "platform") == []  # Upper.yaml defines "Upper", not "upper"
    assert catalog.files("a", "platform") == listed(folders).files("a", "platform")


def test_files_given_besides_the_folders_are_answered_by_the_listing(tmp_path):
    """A file given may be a folder's file again (by a link, or by another spelling of its path): the listing
    keeps it once."""
    folders = make_folders(tmp_path)
    given = [str(tmp_path / "one" / "." / "a.yaml"), str(tmp_path / "two" / "link.yaml"), str(tmp_path / "two" / "c.yaml")]
    catalog = Catalog(folders, {"team": given})
    assert catalog.files("a", "team") == [str(tmp_path / "team" / "a.toml")]
    assert catalog.files("link", "team") == []  # the same file as one/a.yaml, which the platform layer holds
    assert catalog.files("c", "team") == []
    assert catalog.files("a", "platform") == listed(folders).files("a", "platform")


def test_empty_folders_are_found_without_listing_every_file(tmp_path):
    folders = make_folders(tmp_path)
    warnings = empty_folder_warnings(Catalog(folders))
    assert [w.location.file for w in warnings] == [str(tmp_path / "empty") + "/"]
    assert [str(w) for w in warnings] == [str(w) for w in empty_folder_warnings(listed(folders))]


def test_render_of_one_profile_lists_no_folder(tmp_path, monkeypatch):
    team = tmp_path / "team"
    team.mkdir()
    for i in range(50):
        (team / f"p-{i}.yaml").write_text(f"extends: gpu-large\ndescription: profile {i}\n", encoding="utf-8")
    pipeline = Pipeline.discover(team=[str(team)], entry_points=False, pyproject=False)
    resolved = pipeline.resolve("p-7")
    pipeline.warnings(resolved)
    assert pipeline.catalog._index is None
    assert [os.path.basename(f.source) for f in resolved.fragments][-1] == "p-7.yaml"
