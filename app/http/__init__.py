"""The HTTP edge the routers share: request dependencies, the problem+json handlers, the middleware (limits,
timeouts, metrics) and the reads of request handlers (caches, replica routing, heavy reports off the event loop).
The application itself is put together in :mod:`app.main`."""
