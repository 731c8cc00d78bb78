"""The asyncio engine: every target on every example, at most ``concurrency`` calls in flight.

Each finished call is traced, scored and handed to ``on_result`` (which persists it) before
the next one starts, so results reach the store as they finish, not at the end.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agenteval_cli.evaluators.scoring import BoundEvaluator, score
from agenteval_cli.records import Example, Result
from agenteval_cli.targets import Target


@dataclass
class RunSettings:
    concurrency: int = 4
    timeout_s: float = 60.0
    repetitions: int = 1


@dataclass
class WorkItem:
    target: Target
    example: Example
    repetition: int


ResultSink = Callable[[WorkItem, Result], None]


@dataclass
class Runner:
    targets: list[Target]
    evaluators: list[BoundEvaluator]
    settings: RunSettings = field(default_factory=RunSettings)

    def work(self, examples: Iterable[Example]) -> Iterator[WorkItem]:
        """Repetition-major, then example, then target: targets advance side by side."""
        examples = list(examples)
        for repetition in range(self.settings.repetitions):
            for example in examples:
                for target in self.targets:
                    yield WorkItem(target, example, repetition)

    async def run(self, items: Iterable[WorkItem], on_result: ResultSink) -> None:
        """Run ``items`` with ``concurrency`` workers; ``on_result`` sees each as it ends."""
        queue = iter(items)

        async def worker() -> None:
            for item in queue:  # a shared iterator: each item goes to exactly one worker
                on_result(item, await self.run_one(item))

        workers = max(1, self.settings.concurrency)
        await asyncio.gather(*(worker() for _ in range(workers)))

    async def run_one(self, item: WorkItem) -> Result:
        """Call the target once under the tracer, then score it. Never raises for the
        target's or an evaluator's failure: those are recorded in the result."""
        from agenteval_cli.tracing import capture

        outputs: dict[str, Any] | None = None
        error: str | None = None
        started = time.perf_counter()
        with capture() as recorder:
            try:
                outputs = await asyncio.wait_for(
                    item.target(item.example.inputs, [recorder]), self.settings.timeout_s
                )
            except TimeoutError:
                error = f"TimeoutError: no answer within {self.settings.timeout_s:g} s"
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
        latency = time.perf_counter() - started
        trace = recorder.trace()
        trace.latency_s = latency
        trace.error = error
        result = Result(
            example_id=item.example.id,
            repetition=item.repetition,
            outputs=outputs,
            trace=trace,
            error=error,
            latency_s=latency,
        )
        if error is None:
            result.scores = await score(self.evaluators, item.example, outputs or {}, trace)
        return result
