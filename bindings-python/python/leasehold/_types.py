"""Types the package's signatures share."""

from __future__ import annotations

import datetime
import os
from typing import TypeAlias

__all__ = ["Duration", "Pem"]

#: A duration: seconds (``int`` or ``float``), a ``datetime.timedelta``, or a
#: string such as ``"30s"``, ``"1m30s"``, ``"250ms"`` or ``"1h"``.
Duration: TypeAlias = int | float | str | datetime.timedelta

#: PEM data (certificates to trust for ``leaseholds://`` and ``etcds://``, a
#: client certificate or its key): PEM ``bytes``, or the path of a PEM file.
Pem: TypeAlias = bytes | str | os.PathLike[str]
