"""`occusim generate` as a user runs it: a real process with a scripted author and world model, whose draft the real
`occusim validate --discrimination` then accepts; and its refusals of wrong options."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from occusim.clients.cli import main
from occusim.environments import BUNDLED_CATALOG
from tests.helpers import author_worlds
from tests.helpers._served import server_env


def _occusim(tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    env = server_env(tmp_path, OCCUSIM_SCRIPTED_MODELS=author_worlds.__name__)
    return subprocess.run(
        [sys.executable, "-m", "occusim", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )


def _generate(tmp_path: Path, category: str, world_model: str, *options: str) -> subprocess.CompletedProcess[str]:
    """`occusim generate` of a one-task pharmacy technician scenario by the scripted author."""
    return _occusim(tmp_path, "generate", "--occupation", "Pharmacy technician", "--category", category,
                    "--model", author_worlds.AUTHOR, "--world-model", world_model, "--tasks", "1",
                    "--concurrency", "1", *options)


def test_generate_writes_a_draft_that_validate_accepts(tmp_path):
    done = _generate(tmp_path, "healthcare-life-sciences", author_worlds.REFILL_WORLD)

    assert done.returncode == 0, done.stderr
    draft, sheet = tmp_path / "drafts" / "refill-desk.yaml", tmp_path / "drafts" / "refill-desk.review.md"
    assert f"wrote {draft.relative_to(tmp_path)}" in done.stdout and sheet.is_file()
    assert "5 author answers (5 accepted), 1 verification round(s); verified" in done.stdout
    assert "  brief      first pass, answer 1: accepted" in done.stderr
    assert "  references first pass, answer 1: accepted" in done.stderr
    checked = _occusim(tmp_path, "validate", str(draft), "--discrimination")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "ok: 1 scenario, 1 task, 0 errors" in checked.stdout


def test_an_unverified_draft_exits_1_and_says_so(tmp_path):
    done = _generate(tmp_path, "Healthcare & Life Sciences", author_worlds.MISREADING_WORLD,
                     "--rounds", "0", "--out", "out")

    assert done.returncode == 1, done.stderr
    assert "the draft is not verified" in done.stderr
    assert "**Not verified**" in (tmp_path / "out" / "refill-desk.review.md").read_text(encoding="utf-8")


def test_wrong_options_are_refused_before_any_model_call(capsys, tmp_path):
    base = ["generate", "--occupation", "Nurse", "--model", "scripted/none", "--out", str(tmp_path)]
    assert main([*base, "--category", "medicine"]) == 2
    assert "unknown category 'medicine'; choose from: business-enterprise" in capsys.readouterr().err
    assert main([*base, "--category", "healthcare-life-sciences", "--tasks", "0"]) == 2
    assert "--tasks must be at least 1, got 0" in capsys.readouterr().err
    assert main([*base, "--category", "healthcare-life-sciences", "--min-faithful", "1.5"]) == 2
    assert "--min-faithful must be between 0 and 1" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_the_bundled_catalog_is_no_output_folder(capsys):
    out = BUNDLED_CATALOG / "healthcare-life-sciences"
    code = main(
        [
            "generate",
            "--occupation",
            "Nurse",
            "--category",
            "healthcare-life-sciences",
            "--model",
            "scripted/none",
            "--out",
            str(out),
        ]
    )
    assert code == 2
    assert "is inside the bundled catalog" in capsys.readouterr().err


def test_the_help_teaches_the_pipeline(capsys):
    try:
        main(["generate", "--help"])
    except SystemExit as exit_:
        assert exit_.code == 0
    text = capsys.readouterr().out
    for words in (
        "1 brief",
        "5 references",
        "discrimination gates",
        "simcheck",
        "review sheet",
        "--min-faithful",
        "docs/authoring.md",
    ):
        assert words in text
