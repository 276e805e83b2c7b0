"""The session directory: where it is, who may use it, and what is swept, with an injected clock."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from safe_run import places
from safe_run.core.result import ExitStatus, Reason, Result, Status
from safe_run.session.keys import key_text
from safe_run.session import SessionError
from safe_run.session.orphans import Process, left_behind, parse_process
from safe_run.session.store import RETENTION_S, SETUP_GRACE_S, SWEEP_EVERY_S, SessionStore, sessions_root


def store(root: Path, offset: float = 0.0) -> SessionStore:
    return SessionStore(root, clock=lambda: time.time() + offset)


def finished(command: str) -> Result:
    return Result(Status.COMPLETED, 0, None, Reason.SHELL_INTEGRATION, command, None)


def test_runtime_dir_first_then_state_home(tmp_path: Path) -> None:
    assert sessions_root({"XDG_RUNTIME_DIR": str(tmp_path)}) == tmp_path / "safe-run"
    state = tmp_path / "state"
    no_login = str(tmp_path / "no-login")
    assert places.sessions_root({"XDG_RUNTIME_DIR": "/no/such/dir", "XDG_STATE_HOME": str(state)}, no_login) == str(
        state / "safe-run" / "sessions")
    relative = places.sessions_root({"XDG_STATE_HOME": "relative/is/ignored"}, no_login)
    assert Path(relative).parts[-3:] == ("state", "safe-run", "sessions")


def test_without_xdg_runtime_dir_the_login_sessions_runtime_directory_is_used(tmp_path: Path) -> None:
    """MCP hosts pass no XDG_RUNTIME_DIR: /run/user/UID, the person's own, is still the place."""
    login = tmp_path / "user"
    mine = login / str(os.geteuid())
    mine.mkdir(parents=True, mode=0o700)
    state = tmp_path / "state"
    assert places.sessions_root({"XDG_STATE_HOME": str(state)}, str(login)) == str(mine / "safe-run")
    assert places.sessions_root({"XDG_RUNTIME_DIR": str(tmp_path)}, str(login)) == str(tmp_path / "safe-run")
    mine.chmod(0o755)  # not the user's alone: not a login session's
    assert places.sessions_root({"XDG_STATE_HOME": str(state)}, str(login)) == str(state / "safe-run" / "sessions")


def test_a_home_that_cannot_be_written_gets_a_private_directory_in_tmp(tmp_path: Path) -> None:
    """A random uid with HOME=/ (OpenShift pods): safe-run-UID in TMPDIR, as tmux does."""
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    env = {"XDG_STATE_HOME": str(blocked / "state"), "TMPDIR": str(tmp_path)}
    root = places.sessions_root(env, str(tmp_path / "no-login"))
    assert root == str(tmp_path / f"safe-run-{os.geteuid()}")
    SessionStore(Path(root))
    assert Path(root).stat().st_mode & 0o777 == 0o700


def test_the_directory_is_private(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    store(root)
    assert root.stat().st_mode & 0o777 == 0o700


def test_a_directory_others_can_read_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    root.mkdir(mode=0o755)
    root.chmod(0o755)
    with pytest.raises(SessionError, match="not a private directory") as caught:
        store(root)
    assert caught.value.status == ExitStatus.FAILURE


def test_ids_are_unguessable_and_checked(tmp_path: Path) -> None:
    sessions = store(tmp_path / "s")
    first, second = sessions.create("a"), sessions.create("b")
    assert first.id != second.id and len(first.id) == 24
    assert sessions.get(first.id).path == first.path
    with pytest.raises(SessionError, match="not a session id"):
        sessions.get("../etc")
    with pytest.raises(SessionError, match="no session") as caught:
        sessions.get("f" * 24)
    assert caught.value.status == ExitStatus.NO_SESSION


def test_results_are_kept_for_the_retention_time_then_swept(tmp_path: Path) -> None:
    root = tmp_path / "s"
    session = store(root).create("echo hi")
    session.save_result(finished("echo hi"))
    assert store(root, offset=RETENTION_S - 5).all() == [session]
    assert store(root, offset=RETENTION_S + 5).all() == []


def test_a_journaled_command_is_listed_and_gets_its_directory_when_asked_for_until_it_expires(tmp_path: Path) -> None:
    """A named shell's ended commands are lines of its journal: listed as sessions, given their
    own directory (record and result) when their id is asked for, and gone after the retention."""
    shell = store(tmp_path).create("shell", shell_name="w")
    listener = shell.listen()  # its holder lives
    try:
        early, late = store(tmp_path).reserve(), store(tmp_path).reserve()
        now = time.time()
        store(tmp_path).journal(shell, early, "echo early", {"shell_name": "w"}, finished("echo early"), now)
        # written long after it ran, when its holder was idle: dated by its start
        store(tmp_path, RETENTION_S).journal(
            shell, late, "echo late", {"shell_name": "w"}, finished("echo late"), now + RETENTION_S / 2)
        listed = {s.id: s for s in store(tmp_path, RETENTION_S / 2).all()}
        assert listed[late.id].meta()["shell_id"] == shell.id and listed[early.id].shell_id == shell.id
        assert [listed[early.id].started, listed[late.id].started] == [now, now + RETENTION_S / 2]
        assert not late.path.exists(), "a journaled command has no directory of its own until asked for"
        later = store(tmp_path, RETENTION_S + 1)
        assert early.id not in {s.id for s in later.all()}
        with pytest.raises(SessionError, match="no session"):
            later.get(early.id)
        found = later.get(late.id)
        assert (found.path, found.shell_id, found.meta()["command"]) == (late.path, shell.id, "echo late")
        assert found.load_result() == finished("echo late")
        assert os.readlink(found.socket_path) == f"../{shell.id}/socket"
        assert [s.id for s in later.all()].count(late.id) == 1
    finally:
        listener.close()


def test_a_journaled_command_whose_giver_died_while_making_its_directory_is_still_given_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A caller killed between making a command's directory under its staging name and renaming
    it leaves that name taken: the next caller waits for it, then makes the directory itself; a
    sweep removes a staging directory left long enough, and only such a one."""
    from safe_run.session import store as store_module

    monkeypatch.setattr(store_module, "GIVING_WAIT_S", 0.05)
    shell = store(tmp_path).create("shell", shell_name="w")
    listener = shell.listen()
    try:
        command = store(tmp_path).reserve()
        store(tmp_path).journal(shell, command, "echo hi", {"shell_name": "w"}, finished("echo hi"), time.time())
        (tmp_path / f".{command.id}.new").mkdir()
        assert store(tmp_path).get(command.id).load_result() == finished("echo hi")
        left, fresh = tmp_path / f".{'a' * 24}.new", tmp_path / f".{'b' * 24}.new"
        left.mkdir()
        fresh.mkdir()
        os.utime(left, (time.time() - SETUP_GRACE_S - 1,) * 2)
        SessionStore(tmp_path, sweep=False).sweep()
        assert not left.exists() and fresh.is_dir()
    finally:
        listener.close()


def test_a_journal_past_its_size_drops_the_commands_kept_long_enough(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from safe_run.session import store as store_module

    monkeypatch.setattr(store_module, "JOURNAL_MAX", 3000)  # a line is about 700 bytes
    clock = [time.time()]
    writer = SessionStore(tmp_path, clock=lambda: clock[0], sweep=False)
    shell = writer.create("shell", shell_name="w")
    journal = shell.path / "commands"
    for index in range(3):
        writer.journal(shell, writer.reserve(), f"echo {index}", {}, finished(f"echo {index}"), writer.now())
    assert len(journal.read_text().splitlines()) == 3
    clock[0] += RETENTION_S + 1
    writer.journal(shell, writer.reserve(), "echo new", {}, finished("echo new"), writer.now())
    assert len(journal.read_text().splitlines()) == 4, "below its size a journal is only appended to"
    writer.journal(shell, writer.reserve(), "echo more", {}, finished("echo more"), writer.now())
    commands = [json.loads(line)["meta"]["command"] for line in journal.read_text().splitlines()]
    assert commands == ["echo new", "echo more"], "past its size, what expired is dropped"
    assert journal.stat().st_mode & 0o777 == 0o600
    for index in range(3):
        writer.journal(shell, writer.reserve(), f"echo {index}", {}, finished(f"echo {index}"), writer.now())
    assert len(journal.read_text().splitlines()) == 5, "nothing else expired: not read again at once"


def test_callers_close_together_share_one_sweep(tmp_path: Path) -> None:
    """Fifty callers at once must not each read every session: one sweep per SWEEP_EVERY_S does,
    and a caller that must see the store swept (a listing) sweeps regardless."""
    root = tmp_path / "s"
    now = [1000.0]
    at = lambda: now[0]  # noqa: E731
    session = SessionStore(root, clock=at).create("echo hi")
    session.save_result(finished("echo hi"))
    os.utime(session.result_path, (0, 0))  # ended long ago: due for removal at the next sweep
    now[0] += SWEEP_EVERY_S / 2
    assert SessionStore(root, clock=at).all() == [session], "swept just now: not again"
    SessionStore(root, clock=at, sweep=False).sweep()
    assert SessionStore(root, clock=at, sweep=False).all() == [], "a sweep asked for is done at once"
    again = SessionStore(root, clock=at).create("echo again")
    again.save_result(finished("echo again"))
    os.utime(again.result_path, (0, 0))
    now[0] += SWEEP_EVERY_S * 2
    assert SessionStore(root, clock=at).all() == [], "due again"


def test_a_session_put_away_is_out_of_sight_at_once_and_swept_if_its_holder_left_it(tmp_path: Path) -> None:
    """A holder puts its ended session away before it answers, and removes it after; one killed
    in between leaves it to the next sweep."""
    root = tmp_path / "s"
    session = store(root).create("true")
    away = session.put_away()
    assert away.id == session.id and not session.path.exists() and away.path.is_dir()
    assert away.put_away() == away, "put away once"
    assert store(root).all() == []
    with pytest.raises(SessionError, match="no session"):
        store(root).get(session.id)
    SessionStore(root, sweep=False).sweep()
    assert os.listdir(root) == [".sweep"]


def test_a_session_whose_holder_died_says_so_until_it_expires(tmp_path: Path) -> None:
    root = tmp_path / "s"
    session = store(root).create("sleep 100")
    assert store(root, offset=1).all() == [session] and session.load_result() is None, "it may still be starting"
    assert store(root, offset=SETUP_GRACE_S + 1).all() == [session]
    died = session.load_result()
    assert died is not None and died.status is Status.ERROR and died.command == "sleep 100"
    assert died.message == (
        f"session {session.id} ended without a result: its holder died (killed or crashed) while the command ran")
    assert store(root, offset=RETENTION_S + 5).all() == []


def test_a_live_holder_keeps_its_session(tmp_path: Path) -> None:
    root = tmp_path / "s"
    session = store(root).create("sleep 100")
    listener = session.listen()
    try:
        assert store(root, offset=SETUP_GRACE_S + 1).all() == [session]
    finally:
        listener.close()


def test_a_long_socket_path_still_works(tmp_path: Path) -> None:
    root = tmp_path / ("d" * 90) / "sessions"
    session = store(root).create("x")
    assert len(os.fsencode(session.socket_path)) > 108
    listener = session.listen()
    try:
        conn = session.connect(timeout=1.0)
        assert conn is not None
        conn.close()
    finally:
        listener.close()


def test_saved_results_read_back_the_same(tmp_path: Path) -> None:
    session = store(tmp_path / "s").create("echo hi")
    result = finished("echo hi")
    session.save_result(result)
    assert session.load_result() == result
    assert session.result_path.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("name", "typed"),
    [("enter", "\r"), ("ctrl-c", "\x03"), ("Ctrl-D", "\x04"), ("tab", "\t"), ("up", "\x1b[A"), ("esc", "\x1b")],
)
def test_key_names(name: str, typed: str) -> None:
    assert key_text(name) == typed


@pytest.mark.parametrize("name", ["hyper-x", "ctrl-", "ctrl-1", "f13"])
def test_unknown_keys_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="unknown key"):
        key_text(name)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "cannot be read (not JSON)"),
        ("[1, 2]", "is not a JSON object with a start time"),
        ('{"command": "x", "started": "yesterday"}', "is not a JSON object with a start time"),
        ('{"command": 3, "started": 1.0}', "has no command text"),
    ],
)
def test_a_malformed_record_is_skipped_and_reported_once(tmp_path: Path, text: str, problem: str) -> None:
    root = tmp_path / "s"
    reports: list[str] = []
    sound = SessionStore(root, report=reports.append).create("echo fine")
    broken = SessionStore(root, report=reports.append).create("echo broken")
    broken.meta_path.write_text(text)
    assert SessionStore(root, report=reports.append).all() == [sound]
    assert SessionStore(root, report=reports.append).all() == [sound]
    assert reports == [
        f"skipped session {broken.id}: its record {broken.meta_path} {problem}; it is removed after 10 minutes"
    ]
    with pytest.raises(SessionError) as caught:
        SessionStore(root, report=reports.append).get(broken.id)
    assert str(caught.value) == f"session {broken.id} cannot be used: its record {broken.meta_path} {problem}"
    assert caught.value.status == ExitStatus.FAILURE
    store(root, offset=RETENTION_S + 5)
    assert not broken.path.exists()


STAT = "{pid} (sleep 9) {state} 1 {pgrp} {session} 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 {start} 0 0"


def test_a_process_is_read_from_its_stat_line() -> None:
    assert parse_process(STAT.format(pid=7, state="S", pgrp=7, session=5, start=900)) == Process(7, "sleep 9", 5, 900)
    assert parse_process(STAT.format(pid=7, state="Z", pgrp=7, session=5, start=900)) is None
    assert parse_process("garbage") is None


def test_what_a_dead_holder_left_is_its_shells_session_started_no_earlier() -> None:
    processes = [
        Process(10, "bash", 10, 1000),  # the shell itself, if it is still there
        Process(11, "sleep", 10, 1005),  # a job that ignored the hang-up
        Process(12, "old", 10, 999),  # older than the shell: not the command's, whatever its session says
        Process(13, "other", 20, 1005),  # another session
    ]
    assert [p.pid for p in left_behind(processes, shell_pid=10, shell_start=1000)] == [10, 11]


def test_a_temporary_place_someone_else_made_first_is_passed_over(tmp_path: Path) -> None:
    """No runtime directory and no writable home: safe-run-UID in TMPDIR, unless it is not ours
    alone; then nothing is looked for there, and a place under a name nobody can guess is made
    when a session needs it."""
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    env = {"XDG_STATE_HOME": str(blocked / "state"), "TMPDIR": str(tmp_path)}
    no_login = str(tmp_path / "no-login")
    first = tmp_path / f"safe-run-{os.geteuid()}"
    assert places.sessions_root(env, no_login) == str(first)
    first.mkdir(mode=0o755)  # another's (or anyone's to read): never ours
    with pytest.raises(places.NotPrivate):  # nothing of this user's is there to find, no warm process to ask
        places.sessions_root(env, no_login)
    with pytest.raises(places.NotPrivate):
        places.warm_directory(env)
    assert sorted(tmp_path.glob("safe-run-*")) == [first], "looking makes nothing"
    made, instead = places.make_sessions_root(env, no_login)
    assert instead and Path(made).parent == tmp_path and Path(made).name.startswith(f"{first.name}.")
    assert len(Path(made).name) - len(first.name) > 16 and Path(made).stat().st_mode & 0o777 == 0o700
    assert places.sessions_root(env, no_login) == made, "found again by every later call"
    assert places.make_sessions_root(env, no_login) == (made, False)


def test_of_several_temporary_places_of_ours_every_call_takes_the_same(tmp_path: Path) -> None:
    """An older safe-run's .1, .2 ...: the first by name of those that are ours alone, before a free name."""
    first = tmp_path / f"safe-run-{os.geteuid()}"
    older, newer, theirs = (Path(f"{first}.{suffix}") for suffix in ("3", "7", "1"))
    for path in (older, newer, theirs):
        path.mkdir(mode=0o700)
    theirs.chmod(0o755)  # not ours alone: another user could enter it (as one they own could not be ours)
    assert places.temporary_root(str(tmp_path), os.geteuid()) == str(older)
    first.mkdir(mode=0o700)
    assert places.temporary_root(str(tmp_path), os.geteuid()) == str(first)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can make a directory another user owns")
def test_a_store_name_another_user_owns_privately_is_passed_over(tmp_path: Path) -> None:
    first = tmp_path / f"safe-run-{os.geteuid()}"
    first.mkdir(mode=0o700)
    os.chown(first, 65534, 65534)
    env = {"XDG_STATE_HOME": str(tmp_path / "a-file" / "state"), "TMPDIR": str(tmp_path)}
    (tmp_path / "a-file").write_text("")
    made, instead = places.make_sessions_root(env, str(tmp_path / "no-login"))
    assert instead and made != str(first) and Path(made).stat().st_uid == os.geteuid()
