"""Targets that raise a BaseException: each is that example's error, never the end of the run."""

import asyncio


class Halt(BaseException):
    """A BaseException of the target's own."""


def exits(inputs):
    raise SystemExit(0)


async def exits_async(inputs):
    raise SystemExit(0)


def generator_exit(inputs):
    raise GeneratorExit


def stop_iteration(inputs):
    raise StopIteration


async def cancelled(inputs):
    await asyncio.sleep(0)
    raise asyncio.CancelledError("gave up")


def halt(inputs):
    raise Halt("halt")
