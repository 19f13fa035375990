"""Re-pin tests/golden/cases.yaml from what the commands print now (``python -m
tests.golden.update``), keeping each case's comment-free fields; say in the commit why."""

from __future__ import annotations

import sys

import yaml

from tests.golden import CASES, figures_of, load_cases, moved, run_json


def _flow(value: object) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6)
    return text.replace("\n...\n", "").strip()  # a bare scalar ends its document


def _case_text(case: dict) -> str:
    """One case as YAML: the command on one line, each figure on its own."""
    lines = [f"- id: {case['id']}", f"  why: {case['why']}", f"  argv: {_flow(case['argv'])}"]
    lines.append(f"  tolerance: {case['tolerance']}")
    lines.append("  figures:")
    lines += [f"    {key}: {_flow(value)}" for key, value in case["figures"].items()]
    return "\n".join(lines) + "\n"


def main() -> int:
    cases = load_cases()
    header = []
    for line in CASES.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        header.append(line)
    for case in cases:
        now = figures_of(case["argv"], run_json(case["argv"]))
        for key, value in now.items():
            before = case["figures"].get(key)
            if before is not None and moved(before, value, case["tolerance"]):
                print(f"{case['id']}: {key}: {before} -> {value}", file=sys.stderr)
        case["figures"] = {k: round(v, 6) if isinstance(v, float) else v for k, v in now.items()}
    CASES.write_text("\n".join(header) + "\n\n" + "".join(map(_case_text, cases)), "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
