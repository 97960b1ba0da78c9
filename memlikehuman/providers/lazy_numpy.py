"""numpy, imported on first use.

numpy takes ~0.15 s to import; the host hooks (``memlikehuman hook``) run before every prompt and
never touch a vector, so the modules on their path name numpy through this stand-in:

    if TYPE_CHECKING:
        import numpy as np
    else:
        from .lazy_numpy import np
"""

from __future__ import annotations

import importlib
from typing import Any


class _LazyNumpy:
    """Forwards attribute access to numpy, importing it the first time."""

    def __getattr__(self, name: str) -> Any:
        value = getattr(importlib.import_module("numpy"), name)
        setattr(self, name, value)  # later lookups skip __getattr__
        return value


np = _LazyNumpy()
