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
import pathlib
import subprocess
import sys

import pytest

import kfdefaults

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
