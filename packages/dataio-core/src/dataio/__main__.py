"""``python -m dataio``: print the capability report of this host."""

from __future__ import annotations

import argparse
import json
import sys

from .capabilities import format_report, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dataio", description="What dataio can do on this host.")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    r = report()
    if args.json:
        json.dump(r, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_report(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
