"""Every symbolic link the repository commits points inside it, so a fresh clone has no dangling link."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINK_MODE = "120000"


def _committed_links() -> dict[str, str]:
    """Each committed symbolic link, by path, with its target as git stores it."""
    listing = subprocess.run(["git", "ls-files", "-s", "-z"], cwd=REPO, check=True, capture_output=True).stdout
    links = {}
    for entry in listing.decode().split("\0"):
        if not entry.startswith(LINK_MODE + " "):
            continue
        meta, path = entry.split("\t", 1)
        blob = meta.split()[1]
        target = subprocess.run(["git", "cat-file", "blob", blob], cwd=REPO, check=True,
                                capture_output=True).stdout.decode()
        links[path] = target
    return links


def leaves_repository(path: str, target: str) -> bool:
    """Whether a link at `path` (relative to the repository) pointing at `target` resolves outside it."""
    if os.path.isabs(target):
        return True
    resolved = os.path.normpath(os.path.join(os.path.dirname(path), target))
    return resolved == ".." or resolved.startswith("../")


def test_links_that_leave_the_repository_are_told_apart():
    assert leaves_repository(".venv-shared", "/work/elsewhere/.venv")
    assert leaves_repository("occusim/server", "../../server")
    assert leaves_repository("a", "..")
    assert not leaves_repository("occusim/server", "../server")
    assert not leaves_repository("a/b/c", "../../d/../e")


def test_no_committed_link_leaves_the_repository():
    links = _committed_links()
    outside = {path: target for path, target in links.items() if leaves_repository(path, target)}
    assert not outside, f"committed links pointing outside the repository: {outside}"
