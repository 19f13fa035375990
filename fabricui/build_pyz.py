"""``python3 -m fabricui.build_pyz``: the same as ``python3 tools/build_pyz.py`` (the builder
lives beside the package, in the checkout it builds from; this name is kept for scripts that
use it and, like the builder, is not shipped in the wheel)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

if __name__ == "__main__":
    script = Path(__file__).resolve().parents[1] / "tools" / "build_pyz.py"
    if not script.is_file():
        sys.stderr.write(
            "build_pyz: error: build_pyz builds from a fabricui checkout; run it there "
            "(python3 tools/build_pyz.py from the directory holding pyproject.toml)\n"
        )
        sys.exit(2)
    runpy.run_path(str(script), run_name="__main__")
