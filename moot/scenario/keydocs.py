"""The docstring under each key of a scenario model, read from the model's source when the JSON
Schema or docs/scenarios.md are written.

Pydantic can read them itself (`use_attribute_docstrings`), but does so as each model class is
created, walking the import's stack frames (Python 3.11): about 0.14 s of every command's
start-up for text only `moot schema` shows. Read here, as pydantic reads them (a string statement
right under an annotated key, `inspect.cleandoc`ed; a model's own before its bases'), only on
demand.
"""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from functools import cache
from typing import Optional

from pydantic import BaseModel


def key_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """{key: the docstring under it} for `model`'s keys, those of its bases included."""
    found: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if isinstance(cls, type) and issubclass(cls, BaseModel) and cls is not BaseModel:
            found.update(_own(cls))
    return found


def _own(cls: type) -> dict[str, str]:
    """The docstrings under the keys `cls`'s own body annotates."""
    node = _class_node(cls)
    if node is None:
        return {}
    docs: dict[str, str] = {}
    for statement, following in zip(node.body, node.body[1:]):
        if (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                and isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)):
            docs[statement.target.id] = inspect.cleandoc(following.value.value)
    return docs


@cache
def _class_node(cls: type) -> Optional[ast.ClassDef]:
    """`cls`'s definition in its module's source (by its qualified name; a class defined in a
    function: through inspect), if the source is there."""
    if "<locals>" in cls.__qualname__:
        try:
            found = ast.parse(textwrap.dedent(inspect.getsource(cls))).body
        except (OSError, TypeError, SyntaxError):
            return None
        return found[0] if found and isinstance(found[0], ast.ClassDef) else None
    body = _module_body(cls.__module__)
    node: Optional[ast.ClassDef] = None
    for name in cls.__qualname__.split("."):
        node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == name), None)
        if node is None:
            return None
        body = node.body
    return node


@cache
def _module_body(module: str) -> list[ast.stmt]:
    try:
        return ast.parse(inspect.getsource(sys.modules[module])).body
    except (KeyError, OSError, TypeError, SyntaxError):
        return []
