"""The HTTP service (`querywise serve`): FastAPI on uvicorn, in front of one deployment.

`create_app(deployment, authenticator=...)` is the app; `serve(...)` runs it; the session of
every request comes from its verified credentials (`server.auth`)."""

from querywise.server.app import API_VERSION, create_app
from querywise.server.auth import Authenticator, AuthError, Principal, sign_gateway_session
from querywise.server.run import build_app, running, serve

__all__ = ["API_VERSION", "AuthError", "Authenticator", "Principal", "build_app", "create_app", "running", "serve", "sign_gateway_session"]
