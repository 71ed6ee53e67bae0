"""The one error type a device backend raises when it cannot do what was asked."""


class BackendError(Exception):
    """A backend failed at run time; the message names what is missing or wrong and how to fix it.

    Tools turn it into an `isError` result, never into a fake success.
    """
