"""LangSmith sync: dataset push/pull, experiment upload and experiment reads.

Everything here goes through the real ``langsmith`` client, built by :mod:`.client` from
the environment only. Local runs never talk to LangSmith (:mod:`.offline`); an upload
happens after the run, from the store, so a failed upload loses nothing and can be retried.
"""
