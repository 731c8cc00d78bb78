"""A cluster started the way users start one, ``ray start --head``, with the token
authentication Ray turns on once a token exists: a run joins it by address with
``RAY_AUTH_MODE=token`` and stores what the in-process run stores; without that setting the
run ends with exit code 4 and says what to set; and a run given no address starts an
instance of its own rather than joining that cluster."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from stored import by_target, per_example, same_metrics

from agenteval_cli.store.db import Store

pytest.importorskip("ray")

pytestmark = pytest.mark.slow

EXTERNAL = Path(__file__).parent / "data" / "external"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def environment(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment with HOME (where Ray keeps the token) in the test's own
    folder and no Ray address or authentication setting of the machine's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH"))}
    return {**env, "HOME": str(home), **extra}


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``ray start --head --block`` with a token in its HOME: (address, HOME)."""
    home = tmp_path_factory.mktemp("home")
    (home / ".ray").mkdir()
    (home / ".ray" / "auth_token").write_text(secrets.token_hex(32))
    port = free_port()
    log = home / "ray-start.log"
    ray = Path(sys.executable).parent / "ray"
    with log.open("w") as out:
        head = subprocess.Popen(
            [str(ray), "start", "--head", "--block", f"--port={port}", "--num-cpus=2",
             "--include-dashboard=false", "--disable-usage-stats"],
            stdout=out, stderr=subprocess.STDOUT, env=environment(home), start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while "Ray runtime started" not in log.read_text():
            assert head.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        assert "Token authentication is enabled" in log.read_text()
        yield f"127.0.0.1:{port}", home
    finally:
        head.send_signal(signal.SIGTERM)  # --block stops the node's processes with it
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)


def agenteval(*args: object, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agenteval_cli.cli", *map(str, args)],
        capture_output=True, text=True, env=env, timeout=240,
    )  # fmt: skip


def suite(folder: Path) -> Path:
    """Someone else's graphs (a supervisor, a swarm, a plain function) beside their spec."""
    shutil.copytree(EXTERNAL, folder)
    return folder / "travel.yaml"


def test_a_run_joins_a_token_cluster_with_the_token_and_stores_what_in_process_stores(
    tmp_path, started
):
    address, home = started
    spec = suite(tmp_path / "suite")
    env = environment(home, RAY_AUTH_MODE="token")
    local = agenteval("run", spec, "--store", tmp_path / "l.db", "--json", tmp_path / "l.json",
                      env=environment(home))  # fmt: skip
    assert local.returncode == 0, local.stderr
    joined = agenteval("run", spec, "--ray-address", address, "--store", tmp_path / "r.db",
                       "--json", tmp_path / "r.json", env=env)  # fmt: skip
    assert joined.returncode == 0, joined.stderr
    assert f"ray: 2 worker(s) on 1 host(s) of {address}" in joined.stderr
    metrics = {
        name: {e["target"]: e["metrics"] for e in json.loads(path.read_text())["experiments"]}
        for name, path in (("l", tmp_path / "l.json"), ("r", tmp_path / "r.json"))
    }
    assert metrics["r"].keys() == {"supervisor", "swarm", "plain"}
    for target, figures in metrics["l"].items():
        same_metrics(metrics["r"][target], figures)
    with Store(tmp_path / "l.db", readonly=True) as a, Store(tmp_path / "r.db") as b:
        for target in ("supervisor", "swarm", "plain"):
            assert per_example(b, by_target(b)[target]) == per_example(a, by_target(a)[target])


def test_without_the_token_setting_the_run_is_exit_4_saying_what_to_set(tmp_path, started):
    address, home = started
    spec = suite(tmp_path / "suite")
    # Ray tries the refused connection 20 times a second apart before it gives up; 2 tries
    # end in the same error
    refused = agenteval("run", spec, "--ray-address", address, "--store", tmp_path / "s.db",
                        env=environment(home, RAY_NUM_REDIS_GET_RETRIES="2"))  # fmt: skip
    assert refused.returncode == 4, refused.stderr
    last = refused.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: cannot reach the Ray cluster at {address}: "), last
    assert "RAY_AUTH_MODE=token" in last and "~/.ray/auth_token" in last
    assert "Traceback" not in refused.stderr


@pytest.mark.long
def test_with_no_address_a_run_starts_its_own_instance_beside_a_started_cluster(tmp_path, started):
    _, home = started
    spec = suite(tmp_path / "suite")
    own = agenteval("run", spec, "--executor", "ray", "--store", tmp_path / "s.db",
                    env=environment(home))  # fmt: skip
    assert own.returncode == 0, own.stderr
    assert "of a local Ray instance" in own.stderr


def test_the_hint_for_a_cluster_not_reached_follows_what_is_set(tmp_path, monkeypatch):
    from agenteval_cli.execution.ray_executor.cluster import unreachable_hint

    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no token here
    assert unreachable_hint().startswith("start one with 'ray start --head'")
    monkeypatch.setenv("RAY_AUTH_TOKEN", "abc")  # a token Ray would not send
    assert "RAY_AUTH_MODE=token" in unreachable_hint()
    monkeypatch.setenv("RAY_AUTH_MODE", "token")  # sent, and still refused or unreachable
    assert unreachable_hint() == (
        "check the address and the token (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH)"
    )
