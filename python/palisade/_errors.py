"""palisade's errors: one exception class per code of the C++ client
(include/palisade/status.h, by their wire names), all of them palisade.Error."""

from palisade._palisade import CODES


class Error(Exception):
    """A call ended without doing what was asked; `code` says why ("fenced", ...)."""

    code = "internal"

    def __init__(self, message):
        super().__init__(f"{self.code}: {message}" if message else self.code)
        self.message = message


def _class_name(code):
    return "".join(part.capitalize() for part in code.split("_"))


ERRORS = {code: type(_class_name(code), (Error,), {"code": code, "__doc__": f"The call ended {code}."})
          for code in CODES}


def raise_error(code, message):
    """Raises the Error subclass of `code` (called by the C++ module)."""
    raise ERRORS.get(code, Error)(message)
