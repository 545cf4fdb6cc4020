"""The finding kinds, one module each; importing this package registers every one.

Each module here defines a :class:`~worker.pipeline.findings.base.FindingKind` with
``@register``; this package imports every module in its folder, so adding a kind is a
module here (and, for a kind with a cut, its line in worker/pipeline/number_params.py). The
architecture test counts this package as importing each of its modules.
"""

from __future__ import annotations

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
