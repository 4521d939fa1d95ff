"""Errors meant for users: each says which file, key or value is wrong and what would be right."""


class MemlabError(Exception):
    """A problem with the user's input or configuration; the CLI prints it and exits with status 2."""


class DatasetError(MemlabError):
    """A dataset file that cannot be read: names the file and the place in it."""
