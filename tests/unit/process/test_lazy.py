"""process.lazy: a package's names load on first use, and the package reads as if it had
imported them (``from``, ``dir()``, ``__all__``, a missing name said in one line)."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

INIT = '''
from deliverylab.process.lazy import lazy_names

def own():
    return "own"

__all__ = ["Heavy", "light", "own"]
__getattr__, __dir__ = lazy_names(__name__, {"Heavy": ("heavy", "Heavy"),
                                             "light": ("heavy", "weigh")})
'''


@pytest.fixture
def package(tmp_path: Path, monkeypatch) -> Iterator[ModuleType]:
    """A fresh package whose ``Heavy`` and ``light`` are its module ``heavy``'s."""
    name = f"lazy_{uuid.uuid4().hex}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text(INIT)
    (tmp_path / name / "heavy.py").write_text("class Heavy:\n    pass\n\n"
                                              "def weigh():\n    return 'light'\n")
    (tmp_path / name / "other.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield __import__(name)
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]


def test_a_name_loads_its_module_on_first_use_and_stays_bound(package: ModuleType):
    assert f"{package.__name__}.heavy" not in sys.modules
    heavy = package.Heavy
    assert heavy.__module__ == f"{package.__name__}.heavy"
    assert vars(package)["Heavy"] is heavy  # bound: the next access is a plain one
    assert package.light() == "light"  # exported under another name than its own


def test_dir_and_from_see_the_names_before_first_use(package: ModuleType):
    assert {"Heavy", "light", "own"} <= set(dir(package))
    assert f"{package.__name__}.heavy" not in sys.modules
    ns: dict = {}
    exec(f"from {package.__name__} import *", ns)
    assert {"Heavy", "light", "own"} <= set(ns)
    exec(f"from {package.__name__} import other", ns)  # a submodule is still one
    assert ns["other"].__name__ == f"{package.__name__}.other"


def test_a_name_the_package_lacks_is_one_line_saying_what_it_has(package: ModuleType):
    with pytest.raises(AttributeError, match=rf"^{package.__name__} has no 'ghost'; it has "
                                             r"Heavy, light, own$"):
        package.ghost  # noqa: B018 -- the attribute access is the test
    assert not hasattr(package, "ghost")

