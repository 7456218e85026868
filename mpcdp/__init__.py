"""mpcdp — distributed differentially-private learning over secure multi-party computation.

Importing the package does nothing but define names; CrypTen is imported only when a party starts
(:mod:`mpcdp.adapter`).
"""

__version__ = "0.1.0"


def train(model, data, *, protocol: str, label: str | None = None, features=None, test=None, loss=None,
          classes: int | None = None, epsilon: float | None = None, seed: int | None = None, noise: bool = True,
          backend: str = "mpc", eval_every: int | None = None, checkpoint: str | None = None,
          checkpoint_every: int | None = None, resume: bool = False, fresh_budget: bool = False,
          security: str | None = None, debug: bool = False):
    """Train a model on the parties' own data, secure and certified (:func:`mpcdp.api.train`, which documents
    every parameter). Returns a :class:`mpcdp.api.TrainResult` (None on the dealer's process)."""
    from mpcdp.api import train as _train

    return _train(model, data, protocol=protocol, label=label, features=features, test=test, loss=loss,
                  classes=classes, epsilon=epsilon, seed=seed, noise=noise, backend=backend, eval_every=eval_every,
                  checkpoint=checkpoint, checkpoint_every=checkpoint_every, resume=resume,
                  fresh_budget=fresh_budget, security=security, debug=debug)


def load_model(path, module=None):
    """Read a model saved by ``result.save`` or ``--model-out``, with its certificate (:func:`mpcdp.api.load_model`)."""
    from mpcdp.api import load_model as _load_model

    return _load_model(path, module)
