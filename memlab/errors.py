"""Errors meant for users: each says which file, key or value is wrong and what would be right."""


def first_line(error: BaseException) -> str:
    """The first line of `error`'s message (its type's name when it has none), for a one-line error about it.

    A YAML error's first line only names what was being parsed; its problem and mark are given instead.

    Args:
        error: An exception raised by a library while reading a file.
    """
    mark, problem = getattr(error, "problem_mark", None), getattr(error, "problem", None)
    if mark is not None and problem:  # a YAML error: its first line is context; say what and where
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


class MemlabError(Exception):
    """A problem with the user's input or configuration; the CLI prints it and exits with status 2."""


class DatasetError(MemlabError):
    """A dataset file that cannot be read: names the file and the place in it."""


class MissingFileError(DatasetError):
    """A corpus file that is not there: names the places looked at and where to get it."""


class StoreKeyError(MemlabError, ValueError):
    """An id a store cannot keep (empty, or longer than its 255 characters), such as a dataset's dialogue id."""


class MissingExtraError(MemlabError):
    """An optional extra the entry needs is not installed: names the `pip install 'memlab[...]'` that brings it."""


class RunFolderBusy(MemlabError):
    """Another run is writing into the run folder asked for: two runs into one folder would publish over each other."""
