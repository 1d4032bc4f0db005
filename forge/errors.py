"""Errors a user can cause. The CLI turns them into one clear line and exit code 2."""


class ForgeInputError(ValueError):
    """Bad input from the user: names the field or value and what is allowed."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")
