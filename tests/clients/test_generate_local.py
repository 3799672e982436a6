"""`occusim generate` with the bundled local model (Gemma 3 270M) as author: its content is not usable, but under
JSON-schema constrained decoding every stage's answer must be the stage's part, so the pipeline reaches a draft
that is a valid scenario file, verified or not (about 13 minutes here; in the slow suite, `make test SLOW=1`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from occusim.environments import load_scenario_file


@pytest.mark.local_model
def test_the_local_model_drafts_a_schema_valid_scenario(tmp_path):
    # The stages' prompts carry the scenario so far and the part's schema: more than the default context.
    env = {**os.environ, "OCCUSIM_LOCAL_CONTEXT": "32768", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "occusim",
            "generate",
            "--occupation",
            "Librarian (book loans)",
            "--category",
            "education-culture",
            "--model",
            "local",
            "--tasks",
            "1",
            "--retries",
            "1",
            "--rounds",
            "0",
            "--max-tokens",
            "2048",
            "--concurrency",
            "1",
            "--no-cache",
            "--timeout",
            "3600",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=3 * 3600,
    )

    # Verified or not (a 270M model writes no sound scenario), the draft and its sheet are written.
    assert done.returncode in (0, 1), done.stderr
    sheets = list(tmp_path.glob("*.review.md"))
    assert len(sheets) == 1, done.stderr
    sheet = sheets[0].read_text(encoding="utf-8")
    assert "**Stopped at" not in sheet, f"a stage got no valid part:\n{done.stderr}"
    drafts = list(tmp_path.glob("*.yaml"))
    assert len(drafts) == 1, sheet
    scenario = load_scenario_file(drafts[0])
    assert scenario.occupation == "Librarian (book loans)" and len(scenario.tasks) == 1
