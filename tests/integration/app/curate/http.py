"""A request as the Curate page's route tests make it."""

from __future__ import annotations


def get(client, url: str):  # noqa: ANN001, ANN201 - Flask's test client and response
    """``url`` through ``client`` with the server's own host name."""
    return client.get(url, headers={"Host": "127.0.0.1"})
