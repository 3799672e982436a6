"""`occusim export`: a run's episodes as training data, one JSON line per episode."""

from __future__ import annotations

import argparse
import sys

DESCRIPTION = """\
Write each scored episode of a run folder as one JSON line: the messages the agent saw (system prompt,
task, tool calls, tool results exactly as received, the final submit_result), the reward (the judge's
score), the verdict per rubric item, and metadata (task, category, faults, models, seed). Episodes that
ended in an infrastructure error are never exported.

--format openai: {"messages": [...], "tools": "<JSON string of OpenAI tool definitions>", ...}
--format sharegpt: {"conversations": [{"from": "human|gpt|function_call|observation", "value": ...}],
                    "system": ..., "tools": "<JSON string>", ...}
"""

EPILOG = """\
examples:
  occusim export runs/gpt41mini --format openai --min-score 1.0 --out sft.jsonl
  occusim export runs/gpt41mini --format sharegpt > all.jsonl
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the --out folder of `occusim run`")
    parser.add_argument("--format", choices=["openai", "sharegpt"], required=True,
                        help="openai (chat messages) or sharegpt (conversation turns); see above")
    parser.add_argument("--min-score", type=float, metavar="X", help="only episodes scoring at least X")
    parser.add_argument("--out", metavar="FILE", help="write here instead of stdout")


def run(args: argparse.Namespace) -> int:
    from occusim.analysis import RunError, export_run

    try:
        lines = export_run(args.run_dir, args.format, min_score=args.min_score, out=args.out)
    except (RunError, OSError) as error:
        print(f"occusim export: {error}", file=sys.stderr)
        return 2
    if args.out:
        print(f"occusim export: wrote {len(lines)} episode(s) to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write("".join(line + "\n" for line in lines))
    return 0
