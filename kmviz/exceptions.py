"""Exception and warning types of kmviz.

Every error a user can cause with input (a file, a setting) is a ``ValueError`` subclass
whose message names the thing at fault, what was found, what was expected and, where one
exists, the fix.
"""

from __future__ import annotations


class KmvizError(Exception):
    """Base class of kmviz's own exceptions."""


class InvalidParameterError(KmvizError, ValueError):
    """A hyperparameter or option is out of range or of the wrong type."""


class DataError(KmvizError, ValueError):
    """A dataset (file, arrays, upload) cannot be read or is invalid.

    The message is composed from its parts so every loader speaks the same way::

        ratings.csv, line 7: found 'abc' in column 'rating'; expected a number. Fix: ...
    """

    def __init__(self, problem: str, *, path=None, line=None, expected=None, fix=None):
        self.problem = problem
        self.path = None if path is None else str(path)
        self.line = line
        self.expected = expected
        self.fix = fix
        where = []
        if self.path is not None:
            where.append(self.path)
        if line is not None:
            where.append(f"line {line}")
        msg = (", ".join(where) + ": " if where else "") + problem
        if expected:
            msg += f"; expected {expected}"
        msg += "."
        if fix:
            msg += f" Fix: {fix}"
        super().__init__(msg)


class EmptyDataError(DataError):
    """The input holds no ratings (or too few users/items to factorize)."""


class FileFormatError(DataError):
    """The file is not in a format the loader reads (delimiter, columns, binary content)."""


class DataValueError(DataError):
    """A value is not a finite number, or lies outside the declared rating scale."""


class DuplicateRatingsError(DataError):
    """The same (user, item) pair occurs more than once and the policy is 'error'."""


class MissingFileError(DataError, FileNotFoundError):
    """A file or directory named as a data source does not exist.

    Also a ``FileNotFoundError``, so code that handles missing files generically still works.
    """


class FileTooLargeError(DataError):
    """The file is larger than the configured limit; checked before reading."""


class RunStoreError(KmvizError, ValueError):
    """A saved run is missing, incomplete, or from an incompatible version."""


class RunStoreBusyError(RunStoreError):
    """The run index is locked by another writer for longer than the busy timeout.

    Nothing was changed; the operation can simply be tried again.
    """


class NotFittedError(KmvizError, ValueError, AttributeError):
    """A method that needs a fitted estimator was called before ``fit``."""


class NumericalError(KmvizError, RuntimeError):
    """A solver produced NaN or infinite values; the message names the iteration."""


class ConvergenceWarning(UserWarning):
    """An iterative solver stopped at its iteration cap before meeting its tolerance."""


class NoBetterThanMeanWarning(UserWarning):
    """A fitted model predicts the validation data no better than the training mean does;
    the message names the change to try."""
