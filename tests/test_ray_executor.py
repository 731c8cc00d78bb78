"""``executor: ray``: the same spec on Ray workers stores what an in-process run stores;
the spec's folder ships to a cluster's workers; one rate limit holds across workers; a node
that dies mid-run has its unfinished items run again elsewhere, each saved once; a call that
crashes its worker every time is that example's error; a run stopped on Ray resumes; and Ray
is never imported unless a run asks for it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from projects import project
from stored import by_target, no_experiment, per_example, same_metrics, write_demo_spec

import agenteval_cli as agenteval
from agenteval_cli.store.db import Store

ROOT = Path(__file__).resolve().parent.parent

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = pytest.mark.slow

# A target of the user's own, in the spec's folder, importing a neighbour: what reached the
# worker is told by where the call ran (its working directory and process).
PROBE = """\
import os
import time

from helpers import answer


def probe(inputs):
    started = time.time()
    if inputs.get("crash"):
        os._exit(1)
    time.sleep(float(inputs.get("sleep", 0)))
    return {"answer": answer(inputs["question"]), "cwd": os.getcwd(), "pid": os.getpid(),
            "started": started}
"""


def probe_spec(
    folder: Path,
    rows: list[dict],
    *,
    concurrency: int = 4,
    workers: int = 2,
    extra: str = "",
) -> Path:
    return project(
        folder,
        PROBE,
        module="probe.py",
        targets={"probe": "probe"},
        dataset="examples.jsonl",
        data=[
            {"id": f"q{i}", "inputs": row, "outputs": {"answer": row["question"].upper()}}
            for i, row in enumerate(rows)
        ],
        prefix="probe",
        evaluators="\n  - {name: exact, type: custom, target: checks.py:exact}",
        concurrency=concurrency,
        extra=f"timeout_s: 30\nexecutor: ray\nray: {{workers: {workers}}}\n{extra}\n",
        files={
            "helpers.py": "def answer(question):\n    return question.upper()\n",
            "checks.py": (
                "def exact(outputs, reference_outputs):\n"
                "    return outputs['answer'] == reference_outputs['answer']\n"
            ),
        },
    )


def line_of(spec: Path, text: str) -> int:
    """The number of the spec's first line holding ``text``."""
    return next(i for i, line in enumerate(spec.read_text().splitlines(), 1) if text in line)


def stored(store_path: Path, target: str = "probe") -> list:
    with Store(store_path, readonly=True) as store:
        return [s.result for s in store.results(by_target(store)[target])]


def local_cluster(head_cpus: int, nodes: int) -> tuple[Cluster, list]:
    """A Ray cluster of several nodes on this machine. Each added node unpacks shipped code
    into its own folder, as separate machines would: nodes sharing one session folder would
    otherwise unpack (and clear) the same copy under each other's running workers."""
    made = Cluster(initialize_head=True, head_node_args={"num_cpus": head_cpus})
    added = [
        made.add_node(num_cpus=1, runtime_env_dir_name=f"node_{i}_runtime_resources")
        for i in range(nodes)
    ]
    made.wait_for_nodes()
    return made, added


@pytest.fixture(scope="module")
def cluster():
    """A Ray cluster of two nodes (the head and one more), as a user's would be: runs join it
    by address, so the spec's folder ships to the workers."""
    made, _ = local_cluster(head_cpus=1, nodes=1)
    yield made
    made.shutdown()


@pytest.mark.long
def test_the_demo_on_a_local_ray_instance_stores_what_the_in_process_run_stores(tmp_path, invoke):
    spec = write_demo_spec(tmp_path / "spec.yaml", prefix="demo")
    local = invoke("run", spec, "--store", tmp_path / "local.db", "--json", tmp_path / "local.json")
    assert local.exit_code == 0, local.output
    on_ray = invoke(
        "run", spec, "--executor", "ray", "--store", tmp_path / "ray.db",
        "--json", tmp_path / "ray.json",
    )  # fmt: skip
    assert on_ray.exit_code == 0, on_ray.output
    assert "ray: 2 worker(s) on 1 host(s) of a local Ray instance, concurrency 4+4" in on_ray.text
    assert not ray.is_initialized()  # the instance the run started is gone with it
    metrics = {
        name: {e["target"]: e["metrics"] for e in json.loads(path.read_text())["experiments"]}
        for name, path in (("local", tmp_path / "local.json"), ("ray", tmp_path / "ray.json"))
    }
    for target in ("supervisor", "swarm"):
        same_metrics(metrics["ray"][target], metrics["local"][target])
    with Store(tmp_path / "local.db", readonly=True) as a, Store(tmp_path / "ray.db") as b:
        for target in ("supervisor", "swarm"):
            here, there = by_target(a)[target], by_target(b)[target]
            assert per_example(b, there) == per_example(a, here)
            assert len(per_example(b, there)) == 64  # 32 examples x 2 repetitions, each once


@pytest.mark.long
def test_shards_run_on_a_cluster_merge_into_what_the_in_process_run_stores(tmp_path, cluster):
    from agenteval_cli.report.json_report import experiment_metrics
    from agenteval_cli.store.summaries import summary_scores

    (tmp_path / "suite").mkdir()
    spec = write_demo_spec(tmp_path / "suite" / "spec.yaml", prefix="demo")
    agenteval.run(spec, store=tmp_path / "whole.db")
    shards = [tmp_path / f"shard{i}.db" for i in (1, 2)]
    for i, path in enumerate(shards, 1):
        report = agenteval.run(spec, store=path, shard=(i, 2), ray_address=cluster.address)
        assert report.status == "finished"
    agenteval.merge(shards, store=tmp_path / "merged.db")
    with Store(tmp_path / "whole.db") as whole, Store(tmp_path / "merged.db") as merged:
        for target in ("supervisor", "swarm"):
            want, got = by_target(whole)[target], by_target(merged)[target]
            assert per_example(merged, got) == per_example(whole, want)
            same_metrics(experiment_metrics(merged, got), experiment_metrics(whole, want))
            assert summary_scores(merged, got) == summary_scores(whole, want)


def test_a_cluster_gets_the_spec_folder_and_shares_one_rate_limit(tmp_path, cluster, invoke):
    rows = [{"question": f"q{i}"} for i in range(12)]
    spec = probe_spec(tmp_path / "suite", rows, extra="rate_limit: {requests_per_minute: 300}")
    out = invoke("run", spec, "--ray-address", cluster.address, "--store", tmp_path / "s.db")
    assert out.exit_code == 0, out.output
    assert "ray: 2 worker(s)" in out.text
    results = stored(tmp_path / "s.db")
    assert sorted(r.example_id for r in results) == sorted(f"q{i}" for i in range(12))
    assert all(r.error is None and r.scores[0].score is True for r in results)
    # the calls ran in the shipped copy of the spec's folder, not in the folder itself
    cwds = {r.outputs["cwd"] for r in results}
    assert all("working_dir_files" in cwd for cwd in cwds), cwds
    assert len({r.outputs["pid"] for r in results}) == 2  # both workers took calls
    # 300 a minute across both workers: the k-th start is no earlier than k intervals of
    # 0.2 s after the first (a limiter each would let two calls start together, and the
    # 12th would come 1.0 s after the first, not 2.2 s); a start woken late on a busy
    # machine shortens the gap after it, never the schedule
    starts = sorted(r.outputs["started"] for r in results)
    assert all(s - starts[0] >= 0.2 * k - 0.05 for k, s in enumerate(starts)), starts


def test_a_package_of_the_users_own_ships_to_the_cluster_as_a_module(
    tmp_path, cluster, invoke, monkeypatch
):
    spec = probe_spec(tmp_path / "suite", [{"question": "a"}, {"question": "b"}])
    package = tmp_path / "src" / "myevals"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "graphs.py").write_text(
        "def where(inputs):\n    return {'answer': inputs['question'].upper(), 'file': __file__}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "src"))  # importable here, not installed
    spec.write_text(spec.read_text().replace("probe.py:probe", "myevals.graphs:where"))
    out = invoke("run", spec, "--ray-address", cluster.address, "--store", tmp_path / "s.db")
    assert out.exit_code == 0, out.output
    files = {r.outputs["file"] for r in stored(tmp_path / "s.db")}
    assert all("py_modules_files" in f and f.endswith("myevals/graphs.py") for f in files), files


def test_a_target_file_outside_the_spec_folder_is_refused_before_a_cluster_run(
    tmp_path, cluster, invoke
):
    spec = probe_spec(tmp_path / "suite", [{"question": "a"}])
    for name in ("probe.py", "helpers.py"):  # the same code, outside the spec's folder
        (tmp_path / name.replace("probe", "elsewhere")).write_text(
            (tmp_path / "suite" / name).read_text()
        )
    spec.write_text(spec.read_text().replace("probe.py:probe", "../elsewhere.py:probe"))
    out = invoke("run", spec, "--ray-address", cluster.address, "--store", tmp_path / "s.db")
    assert out.exit_code == 2
    line = next(i for i, text in enumerate(spec.read_text().splitlines(), 1) if "elsewhere" in text)
    assert (
        f"{spec}:{line}: target 'probe' is the file ../elsewhere.py, outside the spec's folder"
        in out.text
    )
    assert "Traceback" not in out.output
    assert no_experiment(tmp_path / "s.db")


def test_a_variable_for_the_workers_that_is_not_set_is_refused_before_the_run(
    tmp_path, invoke, monkeypatch
):
    spec = probe_spec(tmp_path / "suite", [{"question": "a"}])
    spec.write_text(
        spec.read_text().replace("ray: {workers: 2}", "ray: {workers: 2, env: [NO_SUCH_KEY]}")
    )
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    out = invoke("run", spec, "--store", tmp_path / "s.db")
    assert out.exit_code == 2
    assert out.output.strip() == (
        f"error: {spec}:{line_of(spec, 'ray:')}: ray.env names NO_SUCH_KEY, "
        "not set in this environment "
        "(set them before the run, or leave them out of ray.env)"
    )
    assert no_experiment(tmp_path / "s.db")


@pytest.mark.long
def test_a_node_that_dies_mid_run_has_its_unfinished_items_run_again_each_saved_once(tmp_path):
    made, nodes = local_cluster(head_cpus=0, nodes=2)
    try:
        rows = [{"question": f"q{i}", "sleep": 0.3} for i in range(24)]
        spec = probe_spec(tmp_path / "suite", rows, concurrency=4)
        seen, notes = [], []
        killed = threading.Event()

        def on_result(target, result):
            seen.append(result.outputs["pid"])
            if len(seen) == 4 and not killed.is_set():
                killed.set()
                made.remove_node(nodes[0], allow_graceful=False)

        report = agenteval.run(
            spec,
            store=tmp_path / "s.db",
            ray_address=made.address,
            on_result=on_result,
            on_note=notes.append,
        )
    finally:
        made.shutdown()
    assert report.status == "finished"
    assert killed.is_set()
    died = [n for n in notes if "died" in n]
    assert len(died) == 1 and "unfinished item(s) run again" in died[0], notes
    results = stored(tmp_path / "s.db")
    ids = [r.example_id for r in results]
    assert sorted(ids) == sorted(f"q{i}" for i in range(24))  # nothing lost, none twice
    assert all(r.error is None for r in results)
    assert len({r.outputs["pid"] for r in results}) == 2  # the survivor finished the rest


def test_a_call_that_crashes_its_worker_every_time_is_its_examples_error(tmp_path, invoke):
    rows = [{"question": f"q{i}"} for i in range(6)]
    rows[2] = {"question": "poison", "crash": True}
    spec = probe_spec(tmp_path / "suite", rows, concurrency=2)
    out = invoke("run", spec, "--store", tmp_path / "s.db")
    assert out.exit_code == 3, out.output  # run errors: one example errored
    results = {r.example_id: r for r in stored(tmp_path / "s.db")}
    assert sorted(results) == [f"q{i}" for i in range(6)]
    assert results["q2"].error.startswith("WorkerCrashed: the Ray worker running this call died 3")
    assert all(results[k].error is None for k in results if k != "q2")
    assert "worker 0" in out.text or "worker 1" in out.text  # each death is said


@pytest.mark.long
def test_a_run_stopped_on_ray_resumes_on_ray_and_stores_each_example_once(tmp_path, invoke):
    rows = [{"question": f"q{i}", "sleep": 0.1} for i in range(20)]
    spec = probe_spec(tmp_path / "suite", rows, concurrency=2)
    count = []

    def stop_after_five(target, result):
        count.append(result)
        if len(count) == 5:
            raise KeyboardInterrupt  # the API's way to stop a run

    report = agenteval.run(spec, store=tmp_path / "s.db", on_result=stop_after_five)
    assert report.status == "interrupted"
    first = len(stored(tmp_path / "s.db"))
    assert 5 <= first < 20
    out = invoke("run", spec, "--resume", "--store", tmp_path / "s.db")
    assert out.exit_code == 0, out.output
    assert f"{20 - first} call(s) left" in out.text
    ids = [r.example_id for r in stored(tmp_path / "s.db")]
    assert sorted(ids) == sorted(f"q{i}" for i in range(20))


@pytest.mark.long
def test_cached_answers_are_looked_up_by_the_driver_and_not_called_again(tmp_path, invoke):
    rows = [{"question": f"q{i}"} for i in range(6)]
    spec = probe_spec(tmp_path / "suite", rows, concurrency=2, extra="cache: true")
    first = invoke("run", spec, "--store", tmp_path / "s.db", "--json", tmp_path / "1.json")
    second = invoke("run", spec, "--store", tmp_path / "s.db", "--json", tmp_path / "2.json")
    assert first.exit_code == 0 and second.exit_code == 0, second.output
    again = stored(tmp_path / "s.db")
    assert all(r.cached and r.attempts == 0 for r in again)
    one, two = (json.loads((tmp_path / f"{n}.json").read_text()) for n in (1, 2))
    assert one["experiments"][0]["metrics"]["exact"] == two["experiments"][0]["metrics"]["exact"]


ODD_OUTPUTS = """\
import threading
from dataclasses import dataclass


@dataclass
class Answer:  # a class of the target file's own, imported under another name on the driver
    text: str


def odd(inputs):
    kind = inputs["kind"]
    if kind == "lock":
        return {"answer": "x", "lock": threading.Lock()}
    if kind == "loop":
        looped = {"answer": "x"}
        looped["self"] = looped
        return looped
    if kind == "own class":
        return {"answer": Answer("x")}
    return {"answer": "x"}
"""


def test_outputs_that_will_not_travel_are_stored_as_in_process_and_cost_only_their_example(
    tmp_path, invoke
):
    kinds = ["plain", "lock", "loop", "own class"]
    spec = probe_spec(tmp_path / "suite", [{"question": k, "kind": k} for k in kinds])
    (tmp_path / "suite" / "odd.py").write_text(ODD_OUTPUTS)
    spec.write_text(spec.read_text().replace("probe.py:probe", "odd.py:odd"))
    stores = {}
    for executor in ("local", "ray"):
        out = invoke("run", spec, "--executor", executor, "--store", tmp_path / f"{executor}.db")
        assert out.exit_code == 3, out.output  # run errors: the one that JSON cannot hold
        stores[executor] = {
            r.example_id: (r.outputs, r.error) for r in stored(tmp_path / f"{executor}.db")
        }
    assert stores["ray"].keys() == stores["local"].keys() == {"q0", "q1", "q2", "q3"}
    for key, (outputs, error) in stores["ray"].items():
        local_outputs, local_error = stores["local"][key]
        assert error == local_error
        if key == "q3":  # its repr names the module and address, different in each process
            assert outputs["answer"] == {"text": "x"} == local_outputs["answer"]
        elif key == "q1":
            assert outputs["lock"].startswith("<unlocked _thread.lock object at 0x")
            assert local_outputs["lock"].startswith("<unlocked _thread.lock object at 0x")
        else:
            assert outputs == local_outputs
    assert stores["ray"]["q2"][1].startswith(
        "target returned outputs that cannot be stored (ValueError: Circular reference"
    )
    assert stores["ray"]["q0"] == ({"answer": "x"}, None)


def test_a_worker_whose_folder_is_unpacked_again_under_it_runs_its_calls_in_the_new_copy(
    tmp_path, monkeypatch
):
    """Nodes sharing a machine share Ray's unpacked code: another node's agent deletes the
    working_dir a worker runs in and unpacks it again. The worker's next batch starts in
    the new copy, so a call's relative paths (and os.getcwd()) work."""
    import asyncio
    import shutil

    from agenteval_cli.execution.ray_executor.worker import Worker

    spec_path = probe_spec(tmp_path / "suite", [{"question": "a"}, {"question": "b"}])
    (tmp_path / "suite" / "probe.py").write_text(
        "def probe(inputs):\n    return {'answer': open('answer.txt').read().strip()}\n"
    )
    (tmp_path / "suite" / "answer.txt").write_text("A\n")
    unpacked = tmp_path / "working_dir_files" / "_ray_pkg_1"
    shutil.copytree(tmp_path / "suite", unpacked)
    monkeypatch.chdir(unpacked)  # where Ray starts a worker, recording it in PWD
    monkeypatch.setenv("PWD", str(unpacked))
    from agenteval_cli.core.records import Example
    from agenteval_cli.execution.ray_executor.cluster import agenteval_version
    from agenteval_cli.execution.ray_executor.worker import Job, Task
    from agenteval_cli.execution.runner import RunSettings
    from agenteval_cli.spec.model import load_spec

    job = Job(
        spec=load_spec(unpacked / spec_path.name),
        only_targets=None,
        settings=RunSettings(concurrency=1),
        samples={"exact": None},
        shipped=True,
        version=agenteval_version(),
    )
    worker = Worker(job)
    assert worker.problem is None, worker.problem
    shutil.rmtree(unpacked)  # another node's agent unpacks the same package again
    shutil.copytree(tmp_path / "suite", unpacked)
    with pytest.raises(FileNotFoundError):
        Path("answer.txt").read_text()  # the old copy is gone from under the worker

    async def one_batch():
        example = Example("q0", {"question": "a"}, {"answer": "A"})
        await worker.submit([Task("probe", example, 0)])
        await worker.close()
        return [m async for m in worker.results()]

    messages = asyncio.run(one_batch())
    (result,) = [r for batch in messages[:-1] for _, r in batch]
    assert result.error is None and result.outputs == {"answer": "A"}


def test_what_workers_print_stays_off_a_json_stdout(tmp_path, invoke):
    spec = probe_spec(tmp_path / "suite", [{"question": f"q{i}"} for i in range(4)])
    probe = tmp_path / "suite" / "probe.py"
    probe.write_text(
        probe.read_text().replace("    started =", "    print('chatty', inputs)\n    started =")
    )
    out = invoke("run", spec, "--json", "-", "--store", tmp_path / "s.db")
    assert out.exit_code == 0, out.output
    assert len(json.loads(out.stdout)["experiments"][0]["results"]) == 4  # the document alone


def test_without_ray_installed_the_run_is_one_line_naming_the_extra(tmp_path, invoke, monkeypatch):
    spec = probe_spec(tmp_path / "suite", [{"question": "a"}])
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    out = invoke("run", spec, "--store", tmp_path / "s.db")
    assert out.exit_code == 2
    assert out.output.strip() == (
        f"error: {spec}:{line_of(spec, 'executor:')}: executor 'ray' needs Ray, "
        "which is not installed "
        "(install it with: pip install 'agenteval-cli[ray]')"
    )
    assert no_experiment(tmp_path / "s.db")


def test_nothing_imports_ray_unless_a_run_asks_for_it():
    code = textwrap.dedent(
        """
        import sys
        from typer.testing import CliRunner
        from agenteval_cli.cli import app
        import agenteval_cli.execution.experiment, agenteval_cli.api.running
        CliRunner().invoke(app, ["run", "--help"])
        print("ray" in sys.modules)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_executor_options_that_cannot_apply_are_one_line(tmp_path, invoke, demo_spec):
    out = invoke("run", demo_spec, "--executor", "rey", "--store", tmp_path / "s.db")
    assert out.exit_code == 2
    assert out.output.strip() == "error: --executor 'rey' is not local or ray (--executor ray)"
    out = invoke("run", demo_spec, "--rescore", "x", "--ray-address", "h:6379")
    assert out.exit_code == 2
    assert out.output.strip() == (
        "error: --rescore calls no target; it cannot be combined with --ray-address "
        f"(leave them out: agenteval rescore {demo_spec} x)"
    )


@pytest.mark.long
def test_conversations_on_a_local_ray_instance_store_what_the_in_process_run_stores(
    tmp_path, invoke
):
    spec = tmp_path / "conversations.yaml"
    text = (ROOT / "configs" / "conversations.yaml").read_text()
    spec.write_text(text.replace("../datasets/", f"{ROOT / 'datasets'}/"))
    args = ["--limit", "4"]
    local = invoke("run", spec, *args, "--store", tmp_path / "local.db")
    assert local.exit_code == 0, local.output
    on_ray = invoke("run", spec, *args, "--executor", "ray", "--store", tmp_path / "ray.db")
    assert on_ray.exit_code == 0, on_ray.output
    with Store(tmp_path / "local.db", readonly=True) as a, Store(tmp_path / "ray.db") as b:
        for target in ("supervisor", "swarm"):
            here, there = by_target(a)[target], by_target(b)[target]
            assert per_example(b, there) == per_example(a, here)

            def turns(store: Store, experiment: str) -> dict:
                return {
                    s.result.example_id: [
                        (t.inputs, t.trace.agent_path, t.status, t.score_map())
                        for t in s.result.turns or []
                    ]
                    for s in store.results(experiment)
                }

            # every turn came back from the workers as it is in-process, scores and all
            assert turns(b, there) == turns(a, here)
            assert all(len(each) >= 2 for each in turns(b, there).values())
