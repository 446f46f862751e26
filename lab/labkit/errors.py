"""The lab's one error type: a message for one line, printed once by lab/run (exit 2)."""


class LabError(Exception):
    """Something the lab could not do (a package missing, a tool absent, a bad scenario file)."""
