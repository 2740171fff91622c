"""One operation, one module: an operation is named only by its module (request model, arguments, catalogue
entry, texts) and its sandbox renderer; everything else (commands, menus, /settings, the shell's `try`, the
client, the worker) reads the entry."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from bot.aiart import models as api
from bot.operations import registry
from bot.operations.registry import build_catalogue
from bot.operations.styles import load_catalogue
from bot.sandbox.operations import operations as sandbox_operations

PACKAGE = Path(__file__).resolve().parents[2] / "bot"
CATALOGUE = build_catalogue(load_catalogue())
#: where a string may equal an operation's name: the operations, and the service's side, whose own words
#: (the colorize and faceswap endpoints, restoration's upscale field) happen to be the same
NAME_PLACES = ("operations/", "aiart/", "sandbox/")


def module(operation) -> str:
    """The operation's own module, relative to the package."""
    return f"operations/{operation.name}.py"


def renderer(operation) -> str:
    """The operation's sandbox renderer, relative to the package."""
    return f"sandbox/renderers/{operation.name}.py"


def sources() -> dict[str, str]:
    return {str(path.relative_to(PACKAGE)): path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py")}


def places(pattern: str) -> set[str]:
    return {name for name, text in sources().items() if re.search(pattern, text)}


@pytest.mark.parametrize("operation", CATALOGUE.values(), ids=list(CATALOGUE))
def test_a_request_model_is_named_only_in_its_operation_module(operation):
    assert places(rf"\b{operation.request_type.__name__}\b") == {module(operation)}


@pytest.mark.parametrize("operation", CATALOGUE.values(), ids=list(CATALOGUE))
def test_an_endpoint_path_is_written_only_in_its_model_and_its_sandbox_renderer(operation):
    path = operation.request_type.path
    assert places(re.escape(f'"{path}"')) == {module(operation), renderer(operation)}
    assert path in {sandbox.path for sandbox in sandbox_operations().values()}


@pytest.mark.parametrize("operation", CATALOGUE.values(), ids=list(CATALOGUE))
def test_no_module_outside_the_operations_own_branches_on_an_operation_name(operation):
    quoted = rf"""[=!]= ["']{operation.name}["']|["']{operation.name}["'] [=!]=|\bin \([^)]*["']{operation.name}["']"""
    assert places(quoted) <= {module(operation)}


def _strings(text: str) -> set[str]:
    """The string constants of a module, docstrings left out."""
    tree = ast.parse(text)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings}


@pytest.mark.parametrize("operation", CATALOGUE.values(), ids=list(CATALOGUE))
def test_no_module_outside_the_catalogue_lists_an_operation_or_its_style_group_by_name(operation):
    """A hand-made list (of style groups for /settings, a setting named after one operation) is how a new
    operation ends up missing somewhere: every such place reads the catalogue instead."""
    names = {operation.name, operation.style_group} - {None}
    found = {place for place, text in sources().items() if not place.startswith(NAME_PLACES) and names & _strings(text)}
    assert found == set()


def test_every_request_model_has_an_operation():
    """Each model is defined in the module of the operation that sends it (one operation may send several
    kinds, as /animate sends one photo, two frames or references to three endpoints)."""
    models = {cls for each in registry.modules() for cls in vars(each).values()
              if isinstance(cls, type) and issubclass(cls, api.Request) and cls.__module__ == each.__name__}
    owners = {operation.request_type.__module__ for operation in CATALOGUE.values()}
    assert {operation.request_type for operation in CATALOGUE.values()} <= models
    assert {model.__module__ for model in models} == owners
