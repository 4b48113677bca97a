"""The base class of every generated message class (common.protocol.messages).

It adds nothing but a name: ``Message`` is what the codec's typed entry points take and give,
and what code that holds a body of any API (the broker's request path) is typed with. Empty
``__slots__``, so that the generated slotted subclasses stay without a ``__dict__``.
"""

from __future__ import annotations


class Message:
    """A request or response body, or a struct inside one, generated from a schema table."""

    __slots__ = ()
