"""``mpcdp party`` with its sends wrapped, for tests of ``security = "malicious"`` on separate processes: run as
``python tests/rogue_party.py LABEL TO -- PARTY ARGUMENTS``, it flips bit 62 of the first word of every payload it
sends to party TO in a message tagged LABEL (a well-formed frame: only the value is wrong), and is otherwise
``mpcdp party PARTY ARGUMENTS``."""

from __future__ import annotations

import sys

from mpcdp.cli import main
from mpcdp.transport.mesh import Mesh


def wrap_sends(label: str, to: int) -> None:
    original = Mesh._move

    def tampering(self, out, into, tag, *rest):
        if tag == label and to in out:
            data = bytearray(out[to][1])
            data[:8] = (int.from_bytes(data[:8], "little") ^ (1 << 62)).to_bytes(8, "little")
            out = {**out, to: (out[to][0], memoryview(data))}
        return original(self, out, into, tag, *rest)

    Mesh._move = tampering


if __name__ == "__main__":
    split = sys.argv.index("--")
    wrap_sends(sys.argv[1], int(sys.argv[2]))
    sys.exit(main(["party", *sys.argv[split + 1:]]))
