"""The command line: parses, calls the library, renders. No logic of its own.

One module per group of commands; importing them registers the commands on `app`.
"""

from querywise.cli import evaluation, index, llm, routing, serve, triage, tune, understand  # noqa: F401  (registers commands)
from querywise.cli._app import app

__all__ = ["app"]

if __name__ == "__main__":  # pragma: no cover
    app()
