"""Running a spec: the asyncio runner, experiments, resume, rescore, cache."""
