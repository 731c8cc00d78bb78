"""The price data every cost is computed with, from Python: :func:`update_prices`."""

from __future__ import annotations


def update_prices(url: str | None = None) -> str:
    """Fetch genai-prices' newest data (from ``url``, else genai-prices' own address) and
    price with it for the rest of this process: the only network use of pricing. The
    source now in use; an OSError with the cause when the fetch failed (the prices bundled
    with genai-prices stay in use)."""
    from agenteval_cli.metrics.prices import update_database

    return update_database(url)
