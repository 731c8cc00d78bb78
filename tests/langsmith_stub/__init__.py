"""An in-memory LangSmith-compatible HTTP server for the tests.

It implements the REST endpoints the installed ``langsmith`` client (0.15.x) calls for
dataset push/pull, experiment upload, ``langsmith.evaluate()`` and experiment reads, with
the request and response shapes that client sends and parses (read from its ``client.py``):

    GET  /info                                   POST /sessions   GET /sessions[/{id}]
    POST /datasets   GET /datasets[/{id}]        PATCH /sessions/{id}
    GET  /datasets/{id}/version                  POST /runs/multipart   POST /runs/batch
    GET  /datasets/{id}/versions                 POST /runs/query
    PUT  /datasets/{id}/tags                     POST /feedback   GET /feedback
    POST|PATCH /v1/platform/datasets/{id}/examples   (multipart)
    POST|PATCH /examples/bulk                    GET /examples    DELETE /examples

``/runs/multipart`` also takes the ``feedback.<id>`` parts ``evaluate()`` queues;
``/runs/query`` filters by session, root or not, run type, trace, reference example and id,
and pages with a cursor (``runs_page_size``); ``GET /sessions`` filters by name, name
substring, id and reference dataset. State is kept in memory (:mod:`.state`); every request
is recorded (``server.requests``); faults (a status for the next N matching requests,
optionally after the request was applied) and latency are injectable. Anything else answers
404, so an unexpected call shows up in a test.
"""

from .server import LangSmithStandIn, serving
from .state import ApiError, Fault, Recorded, State

__all__ = ["ApiError", "Fault", "LangSmithStandIn", "Recorded", "State", "serving"]
