"""``executor: ray``: the run's calls on Ray workers, its store on the driver.

The driver (this process) reads the dataset, looks up cached answers and resumes as a local
run does, and sends the work in batches to Ray actors (:mod:`.worker`), each running the same
asyncio runner with its share of the concurrency. Results stream back as they finish and
the driver stays the store's single writer, so progress, resume, cache and the table behave
as in-process. A worker that dies has its unfinished items run again elsewhere
(:mod:`.driver`); rate limits are one limiter shared by every worker (:mod:`.limiter`); the
spec's folder and the targets' local packages ship to the workers (:mod:`.cluster`).
Nothing here is imported, and Ray is not, unless a run asks for it.
"""
