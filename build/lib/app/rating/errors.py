"""Exceptions raised by the rating library."""


class RatingInputError(ValueError):
    """Invalid input to a rating function.

    ``field`` names the offending argument (for example ``"sides[1]"`` or
    ``"eta"``) so that callers such as the HTTP layer can point at it.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
