"""The HTTP edge the routers share: request dependencies, the problem+json handlers, the middleware (limits,
deadlines, metrics), the ladder and player table of a request from this process's caches, replica routing, and
CPU-bound work and ladder-wide reports kept off the event loop.  The application itself is put together in
:mod:`app.main`."""
