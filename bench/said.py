"""What a bench prints: each line at once (a long run shows its progress), all kept to write to a file at the end."""
from __future__ import annotations

from pathlib import Path


class Said:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def write(self, path: Path | None) -> None:
        """Every line said, into `path` (its folder made), where one is given."""
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(self.lines) + "\n")
