"""Reaching Ray: the missing extra as one line, a local instance or an existing cluster,
and what ships to the workers (the spec's folder, the targets' local packages, named
environment variables)."""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from agenteval_cli.core.errors import ExitCode, UserError
from agenteval_cli.spec.fields import split_import_path
from agenteval_cli.spec.model import Spec

INSTALL_HINT = "install it with: pip install 'agenteval-cli[ray]'"
# Never shipped with the spec's folder: stores, environments, caches, version control.
EXCLUDES = [
    ".git",
    ".agenteval",
    ".venv",
    "venv",
    "__pycache__",
    "*.pyc",
    "node_modules",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    "*.sqlite",
    "*.sqlite3",
    "*.db",
]


class RayFailure(UserError):
    """The Ray cluster cannot be reached, or keeps no worker alive: one line, exit code 4."""

    exit_code = ExitCode.SERVICE_FAILED


@dataclass
class RayOptions:
    """Where a run's Ray workers are: ``address`` None starts a local instance (unless
    ``RAY_ADDRESS`` names a cluster); ``workers`` None is one per CPU."""

    address: str | None = None
    workers: int | None = None
    env: list[str] = field(default_factory=list)  # environment variables the workers get

    @classmethod
    def of(cls, spec: Spec, address: str | None = None) -> RayOptions:
        return cls(address=address or spec.ray.address, workers=spec.ray.workers, env=spec.ray.env)

    def joins_cluster(self) -> bool:
        return bool(self.address or os.environ.get("RAY_ADDRESS"))


def require_ray(spec: Spec | None = None) -> None:
    """A UserError (one line, exit 2) when Ray is not installed; Ray is not imported."""
    if importlib.util.find_spec("ray") is None:
        raise UserError(
            "executor 'ray' needs Ray, which is not installed",
            file=None if spec is None else spec.source,
            line=None if spec is None else spec.line_of("executor"),
            hint=INSTALL_HINT,
        )


def agenteval_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agenteval-cli")
    except PackageNotFoundError:
        return "unknown"


@dataclass
class Connection:
    ray: ModuleType
    started: bool  # this run connected (or started the local instance) and disconnects
    shipped: bool  # the workers get the spec's folder as their working directory
    cpus: float

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()


def connect(spec: Spec, options: RayOptions) -> Connection:
    """Ray, initialised: joined to ``options.address`` (or ``RAY_ADDRESS``) with the spec's
    folder shipped (Ray ships local folders for a whole job, so at ``ray.init``), else a local
    instance with this machine's cores. A process already connected (a notebook that called
    ``ray.init``) keeps its connection and its own runtime environment: nothing is shipped."""
    require_ray()
    import ray

    if ray.is_initialized():
        return Connection(ray, False, False, _cpus(ray))
    shipped = options.joins_cluster()
    env = runtime_env(spec, options, shipped=shipped)
    quiet: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": True}
    try:
        if shipped:
            ray.init(address=options.address, runtime_env=env, **quiet)
        else:
            ray.init(  # "local": a new instance, even beside a cluster 'ray start' began
                address="local",
                num_cpus=os.cpu_count() or 1,
                include_dashboard=False,
                runtime_env=env,
                **quiet,
            )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if not shipped:
            raise RayFailure(f"cannot start a local Ray instance: {reason}") from None
        address = options.address or os.environ.get("RAY_ADDRESS")
        raise RayFailure(
            f"cannot reach the Ray cluster at {address}: {reason}", hint=unreachable_hint()
        ) from None
    return Connection(ray, True, shipped, _cpus(ray))


def unreachable_hint() -> str:
    """What to try when joining a cluster failed. Ray reports a refused token only as a
    failed connection, and sends its token to an address given explicitly only when told
    to (``RAY_AUTH_MODE=token``); ``ray start`` turns token authentication on by default."""
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
        return "check the address and the token (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH)"
    token = os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH")
    if token or (Path.home() / ".ray" / "auth_token").is_file():
        return (
            "a cluster started with 'ray start' wants its token, which Ray sends only with "
            "RAY_AUTH_MODE=token set (it reads RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or "
            "~/.ray/auth_token)"
        )
    return (
        "start one with 'ray start --head', or leave out the address for a local one; a "
        "cluster with token authentication needs RAY_AUTH_MODE=token and RAY_AUTH_TOKEN"
    )


def _cpus(ray: Any) -> float:
    return float(ray.cluster_resources().get("CPU", 1.0))


def runtime_env(spec: Spec, options: RayOptions, *, shipped: bool) -> dict[str, Any]:
    """The workers' runtime environment: tracing off, the named variables, and (joining a
    cluster) the spec's folder and the targets' local packages."""
    from agenteval_cli.langsmith.offline import TRACING_VARS

    env_vars = dict.fromkeys(TRACING_VARS, "false")
    env_vars.update({name: os.environ[name] for name in options.env})
    env: dict[str, Any] = {"env_vars": env_vars}
    if shipped:
        env["working_dir"] = str(spec.base_dir)
        env["excludes"] = EXCLUDES
        modules = local_packages(spec)
        if modules:
            env["py_modules"] = modules
    return env


def check(spec: Spec, options: RayOptions) -> None:
    """Before the run (nothing created yet): Ray is installed, the variables ``ray.env``
    names are set, and joining a cluster, every target file ships with the spec's folder."""
    require_ray(spec)
    missing = [name for name in options.env if name not in os.environ]
    if missing:
        raise UserError(
            f"ray.env names {', '.join(missing)}, not set in this environment",
            file=spec.source,
            line=spec.line_of("ray", "env"),
            hint="set them before the run, or leave them out of ray.env",
        )
    if options.joins_cluster():
        check_shippable(spec)


def check_shippable(spec: Spec) -> None:
    """A target file outside the spec's folder would not reach a cluster's workers."""
    base = spec.base_dir.resolve()
    for target in spec.targets:
        if target.target is None:  # served: nothing of it ships
            continue
        module_part, _ = split_import_path(target.target)
        if not module_part.endswith(".py"):
            continue
        path = (spec.base_dir / module_part).resolve()
        if not path.is_relative_to(base):
            raise UserError(
                f"target {target.name!r} is the file {module_part}, outside the spec's folder "
                f"{base}, which is what ships to the Ray workers",
                file=spec.source,
                line=spec.line_of("targets", target.name),
                hint="keep the spec beside the target's code, or make the code a package",
            )


def local_packages(spec: Spec) -> list[str]:
    """The folders (or single files) of the targets' top-level modules that are not installed
    (a project's own package, an editable install): shipped as ``py_modules``."""
    installed = {
        str(Path(p).resolve())
        for key in ("purelib", "platlib", "stdlib", "platstdlib")
        if (p := sysconfig.get_paths().get(key))
    }
    found: list[str] = []
    for target in spec.targets:
        if target.target is None:
            continue
        module_part, _ = split_import_path(target.target)
        if module_part.endswith(".py"):
            continue
        top = module_part.split(".")[0]
        module = sys.modules.get(top)
        origin = getattr(module, "__file__", None)
        if origin is None:
            continue
        path = Path(origin).resolve()
        where = path.parent if path.name == "__init__.py" else path
        if any(where.is_relative_to(root) for root in installed) or top == "agenteval_cli":
            continue
        if str(where) not in found:
            found.append(str(where))
    return found
