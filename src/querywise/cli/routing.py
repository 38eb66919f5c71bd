"""`querywise router-train`: fine-tune the router's encoder on labelled routing examples."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from querywise.cli._app import app, err, esc, fail, progress
from querywise.files import InputError


@app.command("router-train")
def router_train_cmd(
    train: Annotated[Path, typer.Option("--train", help="JSONL {text, label}; label oos = out of scope (left out).", exists=True, dir_okay=False)],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write the fine-tuned encoder to.")],
    epochs: Annotated[int, typer.Option(min=1, help="Passes over the examples.")] = 1,
    seed: Annotated[int, typer.Option(help="Seed of the pairing and of torch: same seed, same encoder.")] = 0,
    batch_size: Annotated[int, typer.Option("--batch-size", min=2, help="Pairs per batch (in-batch negatives).")] = 64,
) -> None:
    """Fine-tune a copy of the packaged encoder so that each route's examples sit together and
    other messages fall outside; name the folder as `routing.encoder` in the deployment config.
    Worth it with many examples per route (CLINC150: 100 each); a few examples per route keep
    the packaged encoder and centroids."""
    from querywise.embed import fine_tune_encoder
    from querywise.evaluation.router import load_labelled

    try:
        rows = load_labelled(str(train))
    except InputError as exc:
        raise fail(str(exc)) from None
    try:
        with progress() as phase:
            bar: list[Callable[[int], None]] = []  # made at the first batch, which knows the total

            def on_progress(done: int, total: int) -> None:
                if not bar:
                    bar.append(phase("fine-tuning the router encoder (batches)", total))
                bar[0](1)

            manifest = fine_tune_encoder(rows, out_dir, epochs=epochs, seed=seed, batch_size=batch_size, on_progress=on_progress)
    except ValueError as exc:
        raise fail(str(exc)) from None
    err.print(f"[green]wrote[/] {esc(out_dir)}: {manifest.n_examples:,} examples over {manifest.n_routes} routes, {epochs} epoch(s), model id {esc(manifest.model_id)}", highlight=False)
