"""mpcdp — distributed differentially-private learning over secure multi-party computation.

Importing the package does nothing but define names; CrypTen is imported only when a party starts
(:mod:`mpcdp.adapter`).
"""

__version__ = "0.1.0"


def train(*args, **kwargs):
    """Train a model on the parties' own data, secure and certified (:func:`mpcdp.api.train`)."""
    from mpcdp.api import train as _train

    return _train(*args, **kwargs)


def load_model(*args, **kwargs):
    """Read a model saved by ``result.save`` or ``--model-out``, with its certificate (:func:`mpcdp.api.load_model`)."""
    from mpcdp.api import load_model as _load_model

    return _load_model(*args, **kwargs)
