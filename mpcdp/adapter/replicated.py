"""Correlated randomness without a dealer: three data parties make it from replicated keys (honest majority).

The ``honest-majority`` provider. Parties 0, 1 and 2 (the *generators*) hold a replicated secret sharing of
every random value: a value is the sum (or XOR) of three *components*, component k drawn from a
:class:`~mpcdp.randomness.KeyedStream` whose key only generators k and k − 1 (mod 3) hold — so generator g
holds components g and g + 1 and misses g + 2. From that:

* uniform masks cost nothing: every generator draws the components it holds;
* products and ANDs of masks cost nothing: x·y = Σ_g (x_g·y_g + x_g·y_{g+1} + x_{g+1}·y_g) splits the nine
  cross terms among the generators, each term known to one of them (likewise with XOR and AND, and with a
  word shifted first, since a shift commutes with XOR);
* a random bit b = u ⊕ q, u = c₀ ⊕ c₁ known to generator 0 and q = c₂ known to generators 1 and 2, is
  u + q − 2·u·q in the ring; generator 0 sends generator 1 the ring element e = u − α, α drawn from
  component 0 (generators 0 and 2), and u·q = e·q + α·q splits between generators 1 and 2. One round, one
  ring element per bit, from generator 0 to generator 1 (:meth:`ReplicatedSource.arithmetic_bits`).

Every share handed out is re-randomised: generator g adds f_g − f_{g+1} (f_k from component k, a sharing of
zero), and each other data party j gets a pseudo-random share from the three streams it shares with the
generators, which the generators subtract (:meth:`ReplicatedSource.additive`, :meth:`ReplicatedSource.xor`).
The material is then consumed exactly as the dealer's (:mod:`.material`): additive or XOR shares over all
data parties with the same correlations.

When a computation runs among exactly the three generators (the noise committee; every party at m = 3), the
provider also offers *replicated arithmetic* (:meth:`ReplicatedSource.replicated_arithmetic`): its 3-of-3
shares are multiplied by resharing instead of with material (:class:`mpcdp.mpc.ring.ReplicatedProducts`):
each generator sends its share, re-randomised, to the generator before it, and then holds two of the three
shares of every factor, so the nine cross terms split among the generators as above; a fresh sharing of zero
from the component keys (:class:`ReplicatedArithmetic`) re-randomises each product.

Security model (semi-honest): a coalition holding at most one generator — with any number of the other data
parties — sees every mask as uniform: it misses a component (and its generator's share of every other
party's material is masked by a stream it lacks), and the message generator 1 receives is masked by α,
which generator 1 does not hold. Its view of the material is therefore independent of every other party's
values, and the openings that use the material reveal only the opened differences. Two generators together
hold all three components and recover every mask, hence every multiplied value — the analogue of the dealer
colluding with a party. Replicated arithmetic keeps that threshold exactly: the share generator g − 1
receives is masked by a component it lacks, so one generator still sees only uniform words, while two hold
all three shares of every factor (as they held all three components of every mask). There is no dealer process. Keys: 256 bits from the OS CSPRNG, sent once over
mpcdp's links at start-up (:meth:`ReplicatedSource.establish`).

Declared cost: masks, products and ANDs: no communication; replicated arithmetic: no material (its
resharing, one word per factor per generator in one round, is the multiplication's own message). B2A word/bit masks (``WordBits``): k ring elements
per word, comparison masks (``MaskedBits``): ``bits`` ring elements per element, truncation pairs: 64 ring
elements per element — each from generator 0 to generator 1 in one round. Start-up: one round of 32-byte
keys (generator g to generator g − 1, and each generator to each other data party). Needs at least 3 data
parties.
"""

from __future__ import annotations

import torch

from mpcdp.adapter import keyed
from mpcdp.errors import ConfigError
from mpcdp.randomness import KEY_BYTES, KeyedStream, secure_key
from mpcdp.transport import costs
from mpcdp.transport.mesh import Mesh

GENERATORS = 3
KEY_LABEL = "generator keys"
BITS_LABEL = "generator bits"
_COMPONENT = b"mpcdp/replicated-component"
_PAIR = b"mpcdp/replicated-pair"
_source: "ReplicatedSource | None" = None
_bytes_sent = 0


def _mask(bits: int) -> int:
    return -1 if bits >= 64 else (1 << bits) - 1


class ReplicatedSource:
    """This party's keyed streams for dealer-free material, and the primitives every kind is built from.

    Attributes:
        generator: 0, 1 or 2 on the generators, None on the other data parties.
        components: generator g's streams of components g and g + 1 (mod 3), by component.
        pairs: on a generator, the stream it shares with each other data party j (by j); on another data
            party, the stream it shares with each generator (by generator).
        component_keys: the keys of ``components`` (what this party holds anyway; a coalition's view of its
            masks is re-derived from them in tests/test_honest_majority.py).
    """

    def __init__(self, mesh: Mesh, component_keys: dict[int, bytes], pairs: dict[int, KeyedStream]):
        self.mesh = mesh
        self.generator = mesh.rank if mesh.rank < GENERATORS else None
        self.component_keys = component_keys
        self.components = {k: component_stream(key) for k, key in component_keys.items()}
        self.pairs = pairs
        self.generators_only = False  # True inside a committee of the three generators: no share for the others

    @classmethod
    def establish(cls, mesh: Mesh) -> "ReplicatedSource":
        """Make and exchange the keys (1 round): generator g makes component g's key and sends it to generator
        g − 1, and one key for each other data party; the others receive one key from each generator."""
        me, parties = mesh.rank, mesh.parties
        if parties < GENERATORS:
            raise ConfigError(f"`provider` 'honest-majority' needs at least {GENERATORS} data parties. "
                              f"Found parties={parties}.")
        words = KEY_BYTES // 8
        sends, receives, made = {}, {}, {}
        if me < GENERATORS:
            made[me] = secure_key()
            sends[(me - 1) % GENERATORS] = keyed.key_tensor(made[me])
            receives[(me + 1) % GENERATORS] = torch.empty(words, dtype=torch.int64)
            pair_keys = {j: secure_key() for j in range(GENERATORS, parties)}
            sends.update({j: keyed.key_tensor(key) for j, key in pair_keys.items()})
        else:
            receives.update({g: torch.empty(words, dtype=torch.int64) for g in range(GENERATORS)})
        mesh.exchange(sends, receives, label=KEY_LABEL)
        if me < GENERATORS:
            nxt = (me + 1) % GENERATORS
            components = {me: made[me], nxt: keyed.key_bytes(receives[nxt])}
            pairs = {j: KeyedStream(key, _PAIR) for j, key in pair_keys.items()}
        else:
            components = {}
            pairs = {g: KeyedStream(keyed.key_bytes(receives[g]), _PAIR) for g in range(GENERATORS)}
        return cls(mesh, components, pairs)

    # -- drawing -----------------------------------------------------------------------------------------

    def draw(self, component: int, n: int, bits: int = 64) -> torch.Tensor | None:
        """n words of ``component`` (masked to ``bits``), or None where this party does not hold it."""
        return self.held(component, n, bits) if component in self.components else None

    def held(self, component: int, n: int, bits: int = 64) -> torch.Tensor:
        """:meth:`draw` of a component this party holds (a KeyError for one it does not)."""
        return self.components[component].words(n) & _mask(bits)

    def random(self, shape: tuple[int, ...], bits: int = 64) -> dict[int, torch.Tensor]:
        """A fresh replicated random value of ``shape``: the components this party holds (none off the
        generators), each uniform on ``bits``-bit words."""
        n = int(torch.Size(shape).numel())
        return {k: self.held(k, n, bits).reshape(shape) for k in sorted(self.components)}

    def own(self, parts: dict[int, torch.Tensor]) -> torch.Tensor | None:
        """This generator's summand of a replicated value (its first component), None off the generators."""
        return None if self.generator is None else parts[self.generator]

    def next_part(self, parts: dict[int, torch.Tensor]) -> torch.Tensor | None:
        return None if self.generator is None else parts[(self.generator + 1) % GENERATORS]

    # -- handing out shares ------------------------------------------------------------------------------

    def additive(self, value: torch.Tensor | None, shape: tuple[int, ...]) -> torch.Tensor:
        """This party's additive share of Σ_g value_g (``value``: this generator's summand; None elsewhere),
        re-randomised by a sharing of zero and spread over every data party."""
        n = int(torch.Size(shape).numel())
        if self.generator is None:
            return sum((self.pairs[g].words(n) for g in range(GENERATORS)), torch.zeros((), dtype=torch.int64)
                       ).reshape(shape)
        g = self.generator
        assert value is not None  # (a generator's summand)
        share = value.reshape(-1) + self.held(g, n) - self.held((g + 1) % GENERATORS, n)
        for j in self._others():
            share = share - self.pairs[j].words(n)
        return share.reshape(shape)

    def xor(self, value: torch.Tensor | None, shape: tuple[int, ...], bits: int = 64) -> torch.Tensor:
        """This party's XOR share (``bits``-bit words) of ⊕_g value_g, as :meth:`additive`."""
        n, mask = int(torch.Size(shape).numel()), _mask(bits)
        if self.generator is None:
            share = torch.zeros(n, dtype=torch.int64)
            for g in range(GENERATORS):
                share ^= self.pairs[g].words(n) & mask
            return share.reshape(shape)
        g = self.generator
        assert value is not None  # (a generator's summand)
        share = value.reshape(-1) ^ self.held(g, n, bits) ^ self.held((g + 1) % GENERATORS, n, bits)
        for j in self._others():
            share = share ^ (self.pairs[j].words(n) & mask)
        return share.reshape(shape)

    def _others(self) -> list[int]:
        """The other data parties that get a share of what the generators make (none inside a committee)."""
        return [] if self.generators_only else sorted(self.pairs)

    # -- the one protocol: random bits into the ring -----------------------------------------------------

    def arithmetic_bits(self, parts: dict[int, torch.Tensor], k: int) -> torch.Tensor | None:
        """This generator's summand (n, k) of the k bits of the replicated word ⊕ parts, as ring elements
        (None off the generators). One round: generator 0 sends generator 1 n·k ring elements."""
        if self.generator is None:
            return None
        g = self.generator
        some = next(iter(parts.values()))
        n, shifts = some.numel(), torch.arange(k)
        alpha = self.draw(0, n * k)  # generators 0 and 2
        if g == 0:
            assert alpha is not None
            u = ((parts[0] ^ parts[1]).reshape(-1, 1) >> shifts) & 1
            self.mesh.exchange({1: (u.reshape(-1) - alpha).contiguous()}, {}, label=BITS_LABEL)
            return u
        q = (parts[2].reshape(-1, 1) >> shifts) & 1
        if g == 1:
            e = torch.empty(n * k, dtype=torch.int64)
            self.mesh.exchange({}, {0: e}, label=BITS_LABEL)
            return q - 2 * e.reshape(n, k) * q
        assert alpha is not None
        return -2 * alpha.reshape(n, k) * q

    # -- arithmetic on the generators' own shares (a committee of exactly the three of them) -----------------

    def replicated_arithmetic(self, members: tuple[int, ...]) -> "ReplicatedArithmetic | None":
        """The replicated multiplication capability for a computation among ``members``: offered only when
        they are exactly the three generators (an honest majority among them), None otherwise."""
        if self.generator is None or tuple(members) != tuple(range(GENERATORS)):
            return None
        return ReplicatedArithmetic(self)

    def serve(self, kind, *args):
        """``kind``'s material (a :class:`~.material.Material` class) made here, metered as a request."""
        global _bytes_sent
        before = self.mesh.wire_bytes_sent()
        material = kind.generate(self, *args)
        sent = self.mesh.wire_bytes_sent() - before
        _bytes_sent += sent
        costs.record_material(kind.__name__, sent, rounds=int(kind.generator_rounds))
        return material


class ReplicatedArithmetic:
    """What a generator needs to multiply 3-of-3 shares among the three generators by resharing, with no
    material: whom it sends its share to (generator g − 1), whom it receives one from (g + 1), and fresh
    sharings of zero from keys each pair of generators holds alone.

    Generator g's share of a zero sharing is f_g ⊕ f_{g+1} (XOR) or f_g − f_{g+1} (additive), f_k drawn from
    component k, whose key only generators k and k − 1 hold: the three shares cancel, and to generator g − 1,
    which lacks component g + 1, generator g's share is uniform (likewise to g + 1, which lacks component g).
    The protocol itself, and the audit of what moves, live with the multiplication
    (:class:`mpcdp.mpc.ring.ReplicatedProducts`); this object draws no material and sends nothing.
    """

    def __init__(self, source: ReplicatedSource):
        if source.generator is None:
            raise ValueError("replicated arithmetic is for the three generators only")
        self.source = source
        self.position = source.generator
        self.send_to = (source.generator - 1) % GENERATORS
        self.receive_from = (source.generator + 1) % GENERATORS

    def zero_share(self, n: int, *, xor: bool) -> torch.Tensor:
        """This generator's share of n fresh elements of a sharing of zero (XOR of words, or sum in Z_2^64);
        the three generators call it together, in the same order."""
        g = self.position
        first, second = self.source.held(g, n), self.source.held((g + 1) % GENERATORS, n)
        return first ^ second if xor else first - second


def component_stream(key: bytes) -> KeyedStream:
    """The stream of a component's key, from its first word."""
    return KeyedStream(key, _COMPONENT)


def install(source: ReplicatedSource | None) -> None:
    """Count ``source``'s draws and messages from now on (:func:`words_drawn`, :func:`bytes_sent`); the
    material itself is served by the run's provider (:mod:`mpcdp.providers`), which holds the source."""
    global _source, _bytes_sent
    _source, _bytes_sent = source, 0


def words_drawn() -> int:
    """Words this party drew from the provider's keyed streams (0 with a dealer)."""
    if _source is None:
        return 0
    return sum(stream.words_drawn for stream in [*_source.components.values(), *_source.pairs.values()])


def bytes_sent() -> int:
    """Bytes this party sent to make material since its run started (0 off the generators and with a dealer)."""
    return _bytes_sent
