"""What `rankdoctor diagnose --format json` does once cli.py calls scan_parallel (the
benchmark runs both): load the KB, expand the inputs, scan them over one process per
core, diagnose, write the JSON report.

    python bench/rd_parallel.py PATH... [-j N] [-o OUT]
"""

from __future__ import annotations

import argparse
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("-j", "--jobs", type=int, default=None)
    ap.add_argument("-o", "--output", default=None)
    ap.add_argument("--fast-kb", action="store_true", help="load the KB as proposed for kb/loader.py: libyaml's CSafeLoader, no per-signature validation (that is check-kb's job)")
    a = ap.parse_args()
    if a.fast_kb:
        import yaml

        yaml.safe_load = lambda text: yaml.load(text, Loader=yaml.CSafeLoader)  # noqa: E731
    from rankdoctor.diagnose.engine import diagnose
    from rankdoctor.ingest.sources import expand_inputs
    from rankdoctor.kb.loader import load_kb
    from rankdoctor.parallel import progress_for, scan_parallel
    from rankdoctor.report.jsonout import render_json

    kb = load_kb(check=not a.fast_kb)
    sources = expand_inputs(a.paths)
    bar = progress_for(sources)
    try:
        scan = scan_parallel(kb, sources, jobs=a.jobs, progress=bar)
    finally:
        if bar:
            bar.close()
    result = diagnose(kb, scan)
    text = render_json(result) + "\n"
    if a.output:
        with open(a.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
