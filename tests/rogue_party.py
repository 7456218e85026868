"""``mpcdp party`` deviating, for tests of ``security = "malicious"`` on separate processes:

* ``python tests/rogue_party.py LABEL TO -- PARTY ARGUMENTS`` flips bit 62 of the first word of every payload it
  sends to party TO in a message tagged LABEL (a well-formed frame: only the value is wrong);
  ``python tests/rogue_party.py --once LABEL TO -- ...`` flips it in the first such message only (one bit of one
  share: e.g. ``--job train``, whose sampler reuses its products' tags in every pass);
* ``python tests/rogue_party.py --contribute VALUE -- PARTY ARGUMENTS`` contributes, to the aggregation job
  (``--job aggregate``), its vector with the first coordinate replaced by VALUE (e.g. one whose square, in grid
  units, wraps mod 2^64), past its own checks: only the in-MPC bound check (``--input-bound``) can refuse it;
* ``python tests/rogue_party.py --over FACTOR -- PARTY ARGUMENTS`` contributes, to every training release
  (``--job train``), its term rescaled to FACTOR times the bound the release checks it against (the ``bound``
  :mod:`mpcdp.learning.backends` passes; 10 where none is passed), past its own checks;

and is otherwise ``mpcdp party PARTY ARGUMENTS``."""

from __future__ import annotations

import sys

from mpcdp.cli import main
from mpcdp.transport.mesh import Mesh


def wrap_sends(label: str, to: int, once: bool = False) -> None:
    original = Mesh._move
    flipped = []

    def tampering(self, out, into, tag, *rest):
        if tag == label and to in out and not (once and flipped):
            flipped.append(tag)
            data = bytearray(out[to][1])
            data[:8] = (int.from_bytes(data[:8], "little") ^ (1 << 62)).to_bytes(8, "little")
            out = {**out, to: (out[to][0], memoryview(data))}
        return original(self, out, into, tag, *rest)

    Mesh._move = tampering


def contribute(value: float) -> None:
    from mpcdp.jobs import aggregate

    original = aggregate.local_vector

    def rogue_vector(dim, rank, seed):
        vector = original(dim, rank, seed)
        vector[0] = value
        return vector

    aggregate.local_vector = rogue_vector


def over(factor: float) -> None:
    from mpcdp.learning import backends

    original = backends.noisy_release

    def rogue_release(ctx, local, noise, *, bound=None, **rest):
        target = factor * (10.0 if bound is None else bound)
        return original(ctx, local * (target / float(local.norm())), noise, bound=bound, **rest)

    backends.noisy_release = rogue_release


if __name__ == "__main__":
    split = sys.argv.index("--")
    if sys.argv[1] == "--contribute":
        contribute(float(sys.argv[2]))
    elif sys.argv[1] == "--over":
        over(float(sys.argv[2]))
    elif sys.argv[1] == "--once":
        wrap_sends(sys.argv[2], int(sys.argv[3]), once=True)
    else:
        wrap_sends(sys.argv[1], int(sys.argv[2]))
    sys.exit(main(["party", *sys.argv[split + 1:]]))
