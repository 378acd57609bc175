"""``melo serve``: uvicorn with the service's logs."""

from __future__ import annotations

import os
import tempfile

#: The server's logs: one JSON line per request on standard output (``melo.access``), the rest on standard error.
LOG_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "line": {"format": "%(message)s"},
        "default": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
    },
    "handlers": {
        "access": {"class": "logging.StreamHandler", "formatter": "line", "stream": "ext://sys.stdout"},
        "default": {"class": "logging.StreamHandler", "formatter": "default", "stream": "ext://sys.stderr"},
    },
    "loggers": {
        "melo.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
        "melo": {"handlers": ["default"], "level": "INFO", "propagate": False},
        "uvicorn": {"handlers": ["default"], "level": "INFO", "propagate": False},
    },
}


def run_server(host: str, port: int, workers: int) -> None:
    """uvicorn with the service's logs; several workers share their metrics through a fresh directory."""
    import uvicorn

    if workers > 1 and "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="melo-metrics-")
    uvicorn.run("app.main:app", host=host, port=port, workers=workers, access_log=False, log_config=LOG_CONFIG)
