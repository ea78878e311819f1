"""Module docstring."""
from __future__ import annotations

import sys


def helper(x):
    return x


class A(Base):
    """Doc."""

    def __init__(self, config):
        super().__init__()
        self.model = Inner(config)
        self.capture = False

    @decorator
    def forward(self, x, batch=None):
        if x:
            return None
        y = x + 1  # comment
        for i in range(3):
            if i:
                return y
        def inner():
            return 1
        return (lambda: 2)()

    async def run(self): return 1


class Wrapper:
    def __init__(self):
        self.model = A(None)


def g(a, *args, b=1, **kw):
    pass
    x = 1; y = 2
    return a \
        + b
