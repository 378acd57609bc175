"""``python -m app.cli``: the ``melo`` command line."""

from app.cli.main import main

if __name__ == "__main__":
    main()
