"""The boundaries of the package, read from its imports (ast), so that the tree keeps reading as the flow.

The rules are written out in docs/architecture.md:

* Each step imports only the steps before it in :data:`FLOW` (so no two steps import each other).
* The merge engine (smp/) imports nothing of kfdefaults but errors and paths.
* Only flytekit/ imports flytekit or its kfpytorch plugin; only flyte2/ imports Flyte 2's flyte or its plugins
  (``flyteplugins``; ``flytekitplugins`` are flytekit's). The two adapters do not import each other.
* An import inside a function (a lazy import) of kfdefaults' own code says why, on the line above, in a
  ``# lazy:`` comment; the command line's dispatch (cli/) and the package's facade (__init__) are lazy by design.
* No module over about 400 lines, but the port of apimachinery's patch.go and its Go-runtime emulation; no
  function over about 60 lines without a docstring that says why it is long.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import pathlib
import subprocess
import sys

import pytest

import kfdefaults
from kfdefaults.cli import PYDANTIC_LOADER

PACKAGE = pathlib.Path(kfdefaults.__file__).parent

FLOW = ("version", "escape", "errors", "paths", "settings", "targets", "smp", "k8s", "cache", "inputs", "read",
        "layers", "validate", "merge", "backend", "check", "lock", "receipt", "show", "why", "pipeline", "runtime",
        "flytekit", "flyte2", "api", "cli")
"""The steps in flow order: the version, the shared vocabulary (how text from a file is shown, paths, errors,
settings, the SDK targets as data), the engine, Kubernetes' rules, the cache and the input manifest, then read ->
layers -> validate -> merge -> backend -> check -> lock, the receipt (what a pod should have, what it has), show,
why (a failure's log answered with the profile's keys), the pipeline (with the lock command's walk of it), what
both SDK adapters share at run time, the flytekit and Flyte 2 adapters, and the entry points."""

SDK_PACKAGES = {"flytekit": "flytekit", "flytekitplugins": "flytekit", "flyte": "flyte2", "flyteplugins": "flyte2"}
"""Top-level third-party packages -> the one step that may import them (``flytekitplugins`` is flytekit's plugin
namespace, ``flyteplugins`` Flyte 2's)."""

ADAPTERS = ("flytekit", "flyte2")
"""The SDK adapters: side by side in the flow, neither imports the other."""

LONG_MODULES = {"smp/patch.py", "smp/goruntime.py"}
"""The port of apimachinery's patch.go and its Go-runtime emulation: one algorithm, read beside the Go source."""

MAX_MODULE_LINES = 420
MAX_FUNCTION_LINES = 60


def modules() -> list[pathlib.Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def step_of(path: pathlib.Path) -> str | None:
    """The step a module belongs to (its subpackage, or its own name for a top-level module)."""
    rel = path.relative_to(PACKAGE)
    if rel.parts == ("__init__.py",):
        return None  # the facade: every name, imported when first used
    return rel.parts[0].removesuffix(".py")


@functools.cache  # each test walks every module: parse each once per session
def imports(path: pathlib.Path) -> tuple[tuple[str, ast.stmt, bool], ...]:
    """``(absolute module, node, lazy)`` for every import in ``path``; ``lazy`` when inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = list(path.relative_to(PACKAGE.parent).parts[:-1])  # what a relative import is relative to
    lazy_nodes = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                  for n in ast.walk(f)}
    type_checking = {id(n) for node in tree.body if isinstance(node, ast.If)
                     and getattr(node.test, "id", "") == "TYPE_CHECKING" for n in ast.walk(node)}
    found = []
    for node in ast.walk(tree):
        if id(node) in type_checking:
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name, node, id(node) in lazy_nodes) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
                if not node.module:  # ``from . import cache``: each name is a module of the package
                    found += [(f"{module}.{alias.name}", node, id(node) in lazy_nodes) for alias in node.names]
                    continue
            else:
                module = node.module or ""
            found.append((module, node, id(node) in lazy_nodes))
    return tuple(found)


def own_step(module: str) -> str | None:
    """The step of an imported kfdefaults module (``kfdefaults.validate.body`` -> ``validate``), else ``None``."""
    parts = module.split(".")
    if parts[0] != "kfdefaults" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in FLOW else None


def test_every_module_belongs_to_a_step_of_the_flow():
    steps = {step_of(p) for p in modules()} - {None, "__main__"}
    assert steps <= set(FLOW), steps - set(FLOW)


@pytest.mark.slow
def test_each_step_imports_only_the_steps_before_it():
    wrong = []
    for path in modules():
        step = step_of(path)
        if step is None:
            continue
        for module, node, _ in imports(path):
            other = own_step(module)
            if other is not None and other != step and FLOW.index(other) > FLOW.index(step):
                wrong.append(f"{path.relative_to(PACKAGE)}:{node.lineno} ({step}) imports {module} ({other}), a later step")
    assert not wrong, "\n".join(wrong)


def test_the_sdk_adapters_do_not_import_each_other():
    wrong = []
    for path in modules():
        step = step_of(path)
        if step not in ADAPTERS:
            continue
        for module, node, _ in imports(path):
            other = own_step(module)
            if other in ADAPTERS and other != step:
                wrong.append(f"{path.relative_to(PACKAGE)}:{node.lineno} ({step}) imports {module} ({other})")
    assert not wrong, "\n".join(wrong)


def test_the_engine_imports_nothing_of_kfdefaults_but_errors_and_paths():
    wrong = []
    for path in (PACKAGE / "smp").rglob("*.py"):
        for module, node, _ in imports(path):
            if module.startswith("kfdefaults.") and own_step(module) not in ("smp", "errors", "paths"):
                wrong.append(f"{path.relative_to(PACKAGE)}:{node.lineno} imports {module}")
    assert not wrong, "\n".join(wrong)


def test_only_the_sdk_adapter_imports_its_sdk():
    wrong = []
    for path in modules():
        for module, node, _ in imports(path):
            owner = SDK_PACKAGES.get(module.split(".")[0])
            if owner is not None and step_of(path) != owner:
                wrong.append(f"{path.relative_to(PACKAGE)}:{node.lineno} imports {module} (only {owner}/ may)")
    assert not wrong, "\n".join(wrong)


def test_a_lazy_import_of_our_own_code_says_why():
    wrong = []
    for path in modules():
        if step_of(path) in (None, "cli"):
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for module, node, lazy in imports(path):
            if lazy and module.startswith("kfdefaults"):
                comment = lines[max(0, node.lineno - 4):node.lineno]  # the import's line and the three above
                if not any("# lazy:" in line for line in comment):
                    wrong.append(f"{path.relative_to(PACKAGE)}:{node.lineno} imports {module} in a function without "
                                 "a `# lazy:` reason")
    assert not wrong, "\n".join(wrong)


def test_modules_and_functions_stay_small():
    wrong = []
    for path in modules():
        rel = str(path.relative_to(PACKAGE))
        text = path.read_text(encoding="utf-8")
        if rel not in LONG_MODULES and text.count("\n") > MAX_MODULE_LINES:
            wrong.append(f"{rel}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                doc = ast.get_docstring(node) or ""
                if length > MAX_FUNCTION_LINES and "Long because" not in doc:
                    wrong.append(f"{rel}:{node.lineno} {node.name}: {length} lines, and no 'Long because' in its docstring")
    assert not wrong, "\n".join(wrong)


def test_the_flow_has_no_cycle_between_steps():
    """Implied by the order rule, and checked on its own: the graph of step -> step imports is acyclic."""
    edges: dict[str, set[str]] = {}
    for path in modules():
        step = step_of(path)
        for module, _, _ in imports(path):
            other = own_step(module)
            if step and other and other != step:
                edges.setdefault(step, set()).add(other)
    seen: dict[str, int] = {}

    def visit(node: str, trail: tuple[str, ...]) -> None:
        assert node not in trail, " -> ".join(trail + (node,))
        if seen.get(node):
            return
        for nxt in edges.get(node, ()):
            visit(nxt, trail + (node,))
        seen[node] = 1

    for step in edges:
        visit(step, ())


@pytest.mark.parametrize("statement, absent", [
    ("import kfdefaults", ("flytekit", "flyte", "pydantic", "kubernetes", "rich", "yaml")),
    ("from kfdefaults import KfdefaultsWarning, ProfileError, MergeError", ("flytekit", "flyte", "pydantic", "kubernetes")),
    ("from kfdefaults import strategic_merge_patch", ("flytekit", "flyte", "pydantic", "kubernetes", "yaml")),
    ("import kfdefaults.targets", ("flytekit", "flyte", "flyteplugins", "pydantic", "kubernetes")),
    # the Flyte 2 adapter checks that the SDK is there, and imports it (and torch, through the plugin) when used
    ("import kfdefaults.flyte2", ("flytekit", "flyte", "torch")),
])
def test_light_imports_stay_light(statement, absent):
    code = f"import sys\n{statement}\nprint(sorted({{m.split('.')[0] for m in sys.modules}} & {set(absent)!r}))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]", (statement, proc.stdout)


def test_the_architecture_page_shows_the_tree_as_it_is():
    """docs/architecture.md draws the package: every step of FLOW and nothing that is not there."""
    page = (PACKAGE.parent.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    tree = page.split("```text", 1)[1].split("```", 1)[0]
    drawn = {line.split("── ", 1)[1].split()[0].rstrip("/").removesuffix(".py") for line in tree.splitlines() if "── " in line}
    on_disk = {p.name.removesuffix(".py") for p in PACKAGE.iterdir() if p.name != "__pycache__" and not p.name.startswith(".")
               and (p.is_dir() or p.suffix == ".py")}
    assert drawn == on_disk, (drawn ^ on_disk)
    assert set(FLOW) <= drawn


def test_the_public_api_is_the_facade_and_flyte2_as_the_reference_page_says():
    """docs/reference/python-api.md lists the public names, `kfdefaults.__all__` and `kfdefaults.flyte2.__all__`,
    each documented (the plugin's own RunPolicy, re-exported, named); and every exception class of the package
    lives in errors.py."""
    import kfdefaults.flyte2

    page = (PACKAGE.parent.parent / "docs" / "reference" / "python-api.md").read_text(encoding="utf-8")
    documented = set(__import__("re").findall(r"^::: kfdefaults\.([\w.]+)$", page, flags=__import__("re").M))
    assert documented | {"flyte2.RunPolicy"} == set(kfdefaults.__all__) | {f"flyte2.{n}" for n in kfdefaults.flyte2.__all__}
    assert "`kfdefaults.flyte2.RunPolicy`" in page
    elsewhere = [f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}" for path in modules()
                 if path.name != "errors.py" for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(node, ast.ClassDef) and any(
                     getattr(b, "id", getattr(b, "attr", "")).endswith(("Error", "Exception", "Warning"))
                     or getattr(b, "id", getattr(b, "attr", "")) in ("Exception", "BaseException") for b in node.bases)]
    assert not elsewhere, elsewhere


RENDER = ("render", "gpu-large", "--platform", "tests/fixtures/platform", "--team", "tests/fixtures/team")
"""The render whose imports are pinned: a builtin profile, a platform file and a team file (YAML), in the
repository's own project (its ``pyproject.toml``, no lock), no cluster template, facts or node list."""

RENDER_WARM = {
    "kfdefaults", "version", "errors", "escape", "paths", "settings", "targets", "cache", "cache.folder", "inputs",
    "cli", "cli.common", "cli.render", "cli.replay", "cli.streams",
    "read", "read.document", "read.files", "read.scalars", "read.yaml", "read.toml",
    "layers", "layers.builtin", "layers.catalog", "layers.cluster", "layers.entry_points", "layers.environment",
    "layers.flags", "layers.folder", "layers.pyproject",
    "validate", "validate.files", "validate.fragment", "validate.reserved", "validate.sets", "validate.suggest",
    "validate.task_layer",
    "smp", "smp.schema", "k8s", "k8s.mounts", "k8s.names", "k8s.quantity", "k8s.resources",
    "merge", "merge.auto", "merge.elastic", "merge.expand", "merge.fold", "merge.leaves", "merge.locks",
    "merge.near_names", "merge.origins", "merge.primary", "merge.provenance", "merge.result", "merge.step",
    "backend", "backend.elastic_config", "backend.registered",
    "check", "check.apiserver", "check.backend", "check.deprecation", "check.folders", "check.merged",
    "check.replaced", "check.shm", "check.target",
    "lock", "pipeline", "pipeline.project", "show", "show.output",
}
"""kfdefaults' modules a render may import when the cache answers every file (but the replay does not: another
output format): the pipeline, the merge (from the cached fragments) and the checks of the merged profile; no model,
no YAML parser, no lock (the project has none), nothing of the cluster's template, facts or pools."""

RENDER_COLD = RENDER_WARM | {
    "validate.body", "validate.deletions", "validate.enums", "validate.locked", "validate.metadata", "validate.model",
    "validate.podspec", "validate.rdzv", "validate.schema_rules", "validate.torch_env", "k8s.provenance",
    "smp.patch", "smp.goruntime",
}
"""... and when no cache answers (``KFDEFAULTS_NO_CACHE=1``): the validation of a file (its models and checks)
and the merge engine, besides."""

LIBRARIES_WARM = {"flyteplugins"}
"""Libraries a warm render may import: the namespace ``flyteplugins``, where the target looks for Flyte 2's plugin
(:func:`kfdefaults.targets.default_target`, ``find_spec``), nothing else."""

LIBRARIES_COLD = LIBRARIES_WARM | {"pydantic", "pydantic_core", "typing_extensions", "annotated_types",
                                   "typing_inspection", "yaml", "deepmerge"}
"""... cold: the models' pydantic, libyaml through PyYAML, deepmerge for the ``elastic`` sections."""

MODULES_OF = (
    "import json, sys\n"
    "from kfdefaults.cli import main\n"
    "try:\n    main(sys.argv[2:])\nexcept SystemExit as e:\n    status = e.code\n"
    "with open(sys.argv[1], 'w') as f:\n    json.dump({'status': status, 'modules': sorted(sys.modules)}, f)\n"
)


def modules_of_render(tmp_path, *args: str, **env: str) -> tuple[set[str], set[str], set[str]]:
    """kfdefaults' modules (without the ``kfdefaults.`` prefix), the top-level libraries and all the modules that a
    ``kfdefaults render`` imports in a process of its own, beyond what the interpreter starts with."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("KFDEFAULTS_", "PYDANTIC_"))}
    base["KFDEFAULTS_CACHE_DIR"] = str(tmp_path / "cache")
    out = tmp_path / "modules.json"
    bare = subprocess.run([sys.executable, "-c", "import json, sys; print(json.dumps(sorted(sys.modules)))"],
                          capture_output=True, text=True, check=True, env=base)
    proc = subprocess.run([sys.executable, "-c", MODULES_OF, str(out), *RENDER, *args], capture_output=True, text=True,
                          env={**base, **env}, cwd=PACKAGE.parent.parent)
    found = json.loads(out.read_text())
    assert found["status"] in (0, None), proc.stderr
    # the command line's stand-in for pydantic's plugin loader is no import of pydantic (kfdefaults.cli)
    modules = set(found["modules"]) - set(json.loads(bare.stdout)) - {"__main__", PYDANTIC_LOADER}
    own = {m.removeprefix("kfdefaults.") if m != "kfdefaults" else m for m in modules if m.split(".")[0] == "kfdefaults"}
    # a compiled extension's runtime (cython_runtime, _cython_3_1) and _sysconfigdata are the interpreter's
    libraries = {m.split(".")[0] for m in modules if not m.startswith("_") and m != "cython_runtime"}
    return own, libraries - set(sys.stdlib_module_names) - {"kfdefaults"}, modules


def test_a_cold_render_imports_only_what_its_inputs_need(tmp_path):
    """With no cache, a render imports the validation of a file, the merge and the checks, and nothing of a lock,
    the cluster's template or facts, TOML profiles, the SDKs or other commands (docs/performance.md)."""
    own, libraries, modules = modules_of_render(tmp_path, KFDEFAULTS_NO_CACHE="1")
    assert own - RENDER_COLD == set(), "a cold render imports more of kfdefaults than it may"
    assert libraries - LIBRARIES_COLD == set(), "a cold render imports more libraries than it may"
    assert {"validate.model", "validate.body"} <= own and "pydantic" in libraries  # the set is the render's
    # pydantic's plugin loader would import importlib.metadata (the command line disables its plugins: kfdefaults.cli)
    assert "importlib.metadata" not in modules


def test_a_render_the_cache_answers_imports_no_model_and_no_parser(tmp_path):
    """With every file in the cache (a second render, another output format: not replayed), a render imports no
    pydantic model, no YAML parser, no check of a single file (docs/performance.md)."""
    modules_of_render(tmp_path)  # fills the cache
    own, libraries, _ = modules_of_render(tmp_path, "-o", "json")
    assert own - RENDER_WARM == set(), "a render the cache answers imports more of kfdefaults than it may"
    assert libraries - LIBRARIES_WARM == set(), "a render the cache answers imports more libraries than it may"
    assert "merge.fold" in own  # it merged: not a replay
