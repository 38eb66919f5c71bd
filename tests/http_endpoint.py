"""An HTTP endpoint on 127.0.0.1 that serves an index over the retriever protocol (see
`querywise.retrieve.http`) and records what it was sent."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from querywise.conditions import Where
from querywise.index import Index


class Endpoint:
    """Serves `index` over the default protocol (or a renamed one); records what it was sent."""

    def __init__(self, index: Index) -> None:
        self.index, self.bodies, self.honour_filters, self.reply = index, [], True, None
        self.trickle: float | None = None  # seconds between the answer's bytes: a server that never stalls long enough to time out a read
        self.names = {"query": "query", "k": "k", "filters": "filters", "hits": "hits", "id": "id"}
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.bodies.append((body, dict(self.headers)))
                status, raw = endpoint.answer(body)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                if endpoint.trickle is None:
                    self.wfile.write(raw)
                    return
                for byte in raw:
                    try:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                    except OSError:  # the client gave up: what the test wants
                        return
                    time.sleep(endpoint.trickle)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/search"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, body: dict[str, Any]) -> tuple[int, bytes]:
        if self.reply is not None:
            return self.reply
        n = self.names
        raw = body[n["filters"]]
        where = Where.model_validate(raw) if raw and self.honour_filters else None
        hits = self.index.search(body[n["query"]], k=body[n["k"]], where=where, mode=body.get("mode", "hybrid"))
        rows = [{n["id"]: h.id, "score": h.score, "text": h.text, "payload": h.payload} for h in hits]
        return 200, json.dumps({n["hits"]: rows} if "." not in n["hits"] else {"data": {"results": rows}}).encode()
