"""Writing a sweep's result: PREFIX.json (the numbers), PREFIX.md (the table people read), PREFIX.png (the plot)."""

from __future__ import annotations

import json
import pathlib
from typing import Any, Callable


def write_record(out: str, record: dict, text: str, plot: Callable[[dict, pathlib.Path], None], *,
                 default: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """Write the three files of ``out``; return the table, the plot's path and the record."""
    prefix = pathlib.Path(out)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    prefix.with_suffix(".json").write_text(json.dumps(record, indent=1, default=default) + "\n")
    prefix.with_suffix(".md").write_text(text)
    plot(record, prefix.with_suffix(".png"))
    return {"markdown": text, "png": str(prefix.with_suffix(".png")), "record": record}
