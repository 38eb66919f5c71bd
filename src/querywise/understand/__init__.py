"""Understanding moves, one module each; `pipeline.py` composes them into a plan."""
