"""`python -m querywise`: the same command line as the `querywise` script."""

from querywise.cli import app

app(prog_name="querywise")
