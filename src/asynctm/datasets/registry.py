"""The registry of the paper's eight datasets: ``DATASETS`` maps each name (as used in the config and in
``data/raw/<name>``, ``data/processed/<name>/<protocol>``) to its module under :mod:`asynctm.datasets`, imported on
first access, so one dataset's missing optional dependency never breaks the others."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import ModuleType

# The datasets, each a module of that name under asynctm.datasets; the paper's order (Table 1, then the text tasks).
_MODULES = ("bike_sharing", "blogfeedback", "bbc_sport", "newsgroups20", "semeval", "imdb", "wsd_apple", "wsd_java")


class _LazyRegistry(Mapping):
    """A read-only ``name -> module`` mapping that imports a module when it is first looked up."""

    def __getitem__(self, name: str) -> ModuleType:
        if name not in _MODULES:
            raise KeyError(f"unknown dataset {name!r}; known: {', '.join(_MODULES)}")
        return importlib.import_module(f"{__package__}.{name}")

    def __iter__(self):
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)


DATASETS: Mapping[str, ModuleType] = _LazyRegistry()


def get_module(name: str) -> ModuleType:
    """The dataset module registered under ``name`` (ValueError with the known names if none)."""
    try:
        return DATASETS[name]
    except KeyError as e:
        raise ValueError(e.args[0]) from None
