"""Add or update catalog entries in both languages at once.

    python tools/i18n_add.py fragment.json

``fragment.json`` maps each key to ``[english, chinese]``. The two catalogs are
rewritten sorted, under a file lock so that concurrent edits cannot clobber
each other.
"""

from __future__ import annotations

import fcntl
import json
import sys
from pathlib import Path

CATALOGS = Path(__file__).resolve().parent.parent / "assets" / "i18n"


def add(entries: dict[str, list[str]]) -> None:
    for key, pair in entries.items():
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(s, str) and s for s in pair)):
            raise SystemExit(f"{key}: expected [english, chinese], got {pair!r}")
    with open(CATALOGS / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for idx, lang in enumerate(("en", "zh")):
            path = CATALOGS / f"{lang}.json"
            data = json.loads(path.read_text(encoding="utf-8"))
            for key, pair in entries.items():
                data[key] = pair[idx]
            path.write_text(
                json.dumps(dict(sorted(data.items())), ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
            )


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        add(json.loads(Path(arg).read_text(encoding="utf-8")))
