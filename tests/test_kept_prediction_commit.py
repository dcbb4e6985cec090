"""Issue 39: a kept prediction is checked against the commit its index names; edited after
it, it is refused naming the index line (a real git repository under tmp_path)."""

import subprocess

import pytest

from claimcheck.core.errors import InputError
from claimcheck.loaders.gitfiles import committed_bytes
from claimcheck.report.beforehand_index import read_index

HEADER = "file,protocol,engine,card,written_at_commit,what_model\n"


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c",
                           "user.email=t@t", *args], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def kept(tmp_path):
    repo = tmp_path / "repo"
    (repo / "preds").mkdir(parents=True)
    git(repo, "init", "-q")
    pred = repo / "preds" / "p.json"
    pred.write_text('{"steps": [1.0]}\n')
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "prediction")
    commit = git(repo, "rev-parse", "--short", "HEAD")
    (repo / "preds" / "index.csv").write_text(HEADER + f"p.json,ladder,e,h200,{commit},m\n")
    return repo / "preds", commit


def test_an_unchanged_prediction_passes(kept):
    d, commit = kept
    assert [r["file"] for r in read_index(d / "index.csv")] == ["p.json"]
    assert committed_bytes(d / "p.json", commit) == b'{"steps": [1.0]}\n'


def test_a_prediction_edited_after_its_commit_is_refused(kept):
    d, commit = kept
    (d / "p.json").write_text('{"steps": [1.1]}\n')
    with pytest.raises(InputError, match=rf"index\.csv:2: file: p\.json differs from the "
                       rf"bytes commit {commit} holds: a kept prediction is not edited"):
        read_index(d / "index.csv")


def test_outside_a_repository_the_check_is_left_out(tmp_path):
    (tmp_path / "p.json").write_text("{}")
    assert committed_bytes(tmp_path / "p.json", "abc1234") is None
