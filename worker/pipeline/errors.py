"""The one exception type for user mistakes."""


class InputError(ValueError):
    """Bad input from the user; the message says what to fix, in one line.

    The CLI prints it without a traceback and exits with status 2; the app shows it as an
    alert. Everything else is a bug and keeps its traceback.
    """
