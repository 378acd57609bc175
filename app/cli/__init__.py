"""The ``melo`` command line (``python -m app.cli``; its entry point is ``app.cli.main:main``)."""
