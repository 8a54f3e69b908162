"""``import deliverylab as dl``: every public name resolves to what the module map says."""

from __future__ import annotations

import importlib
import pkgutil
import types

import deliverylab as dl


def test_every_name_resolves_even_after_every_submodule_was_imported():
    # Importing a submodule sets it as an attribute of the package: a module named like
    # an exported function would then shadow it (dl.progress was once a module).
    for info in pkgutil.walk_packages(dl.__path__, "deliverylab."):
        importlib.import_module(info.name)
    for name in dl.__all__:
        value = getattr(dl, name)
        wants_module = name in dl._SUBMODULES
        assert isinstance(value, types.ModuleType) == wants_module, name


def test_the_module_map_names_each_module_that_exists():
    for module in dl._MODULES:
        importlib.import_module(f"deliverylab.{module}")
