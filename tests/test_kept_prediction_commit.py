"""Issue 39: a kept prediction is checked against the commit its index names; edited after
it, it is refused naming the index line (a real git repository under tmp_path)."""

import subprocess

import pytest

from claimcheck.files.errors import InputError
from claimcheck.files.gitfiles import committed_bytes
from claimcheck.pipeline.beforehand_index import read_index

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


def test_what_git_says_of_a_file_at_a_commit_full_and_shallow(kept, tmp_path):
    """files.gitfiles.at_commit tells a file the commit does not hold, and a commit a full
    history does not have, from a commit a shallow clone (CI) cannot see: only the last is
    left unchecked."""
    from claimcheck.files.gitfiles import AtCommit, at_commit
    d, first = kept
    assert at_commit(d / "p.json", first) == AtCommit(True, True, b'{"steps": [1.0]}\n')
    late = at_commit(d / "index.csv", first)  # written after the commit it names
    assert (late.checked, late.commit_found, late.data) == (True, True, None)
    gone = at_commit(d / "p.json", "abcdef1")  # full history: no such commit
    assert (gone.checked, gone.commit_found) == (True, False)
    repo = d.parent
    (d / "q.json").write_text("{}\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "second")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow))
    cut = at_commit(shallow / "preds" / "p.json", first)
    assert (cut.checked, cut.why) == (False, f"a shallow clone without commit {first}")
    outside = tmp_path / "plain"
    outside.mkdir()
    (outside / "p.json").write_text("{}")
    assert at_commit(outside / "p.json", first).why == "not in a git repository"


def test_an_index_naming_a_commit_without_the_file_is_refused(kept):
    """A commit the history has but that does not hold the prediction (it was committed
    later than the index says) is refused naming the line."""
    d, commit = kept
    git(d.parent, "commit", "-q", "--allow-empty", "-m", "later")
    (d / "q.json").write_text("{}")
    (d / "index.csv").write_text(HEADER + f"p.json,ladder,e,h200,{commit},m\n"
                                 + f"q.json,ladder,e,h200,{commit},m\n")
    with pytest.raises(InputError, match=rf"index\.csv:3: written_at_commit: q\.json: "
                       rf"commit {commit} does not hold it"):
        read_index(d / "index.csv")
