"""Errors meant for users: each says which file, key or value is wrong and what would be right."""


class MemlabError(Exception):
    """A problem with the user's input or configuration; the CLI prints it and exits with status 2."""


class DatasetError(MemlabError):
    """A dataset file that cannot be read: names the file and the place in it."""


class MissingFileError(DatasetError):
    """A corpus file that is not there: names the places looked at and where to get it."""


class KeyTooLongError(MemlabError, ValueError):
    """An id a store cannot keep (empty, or longer than its 255 characters): a dataset's id or user id, as stored."""


class MissingExtraError(MemlabError):
    """An optional extra the entry needs is not installed: names the `pip install 'memlab[...]'` that brings it."""
