"""The adapter to CrypTen: the one package of mpcdp that touches CrypTen, split by job.

Everything CrypTen keeps in globals (the ``cfg`` singleton, the communicator behind ``comm.get()``, the
``crypten.generators`` PRNG table, the dealer client behind ``TTPClient.get()``, CrypTen's tuple provider chosen
by the run's provider record) is touched here and nowhere else. The rest of mpcdp calls the plain functions below and sees CrypTen tensors only as opaque handles
inside :class:`mpcdp.mpc.shared.Shared`.

* :mod:`.compat`: making CrypTen 0.4.1 import and work on torch 2.13 (its ONNX export, its saved files loaded
  with an allow-list), and the only ``import crypten`` of mpcdp;
* :mod:`.communicator`: CrypTen's communicator over mpcdp's links (no gloo process group exists), its object
  messages as JSON, never pickled (:mod:`.object_messages`);
* :mod:`.group`: who this party is, and the run's provider;
* :mod:`.session`: a data party joining and leaving (the building blocks a provider sets its material source
  up with), and the CrypTen protocols mpcdp calls directly;
* :mod:`.dealer`: the dealer process; :mod:`.dealer_link`: the wire protocol between it and the parties;
* :mod:`.material`: each kind of correlated randomness, its dealer side, its party side and its dealer-free
  side together (:mod:`.chunk_masks`: those of the chunk one-hot masks); :mod:`.replicated`: the dealer-free
  provider's keys and primitives; :mod:`.lanes`: local arithmetic on lane-packed one-hot words;
* :mod:`.metering`: CrypTen's protocols and the dealer traffic counted in :mod:`mpcdp.transport.costs`;
* :mod:`.keyed`: CSPRNG-keyed streams in place of CrypTen's Mersenne-Twister generators;
* :mod:`.objects`: the dealer's allow-list.

Security model of the providers (their records are in :mod:`mpcdp.providers`, which states the same; the
guide mpcdp/README.md, "Threat model"):

* ``dealer`` (CrypTen's TTP): an extra process of rank m that is never a data party generates the
  correlated randomness and hands each party its share. It never receives an opened value or an input
  share. Security rests on it not colluding with a party.
* ``honest-majority``: no dealer. Parties 0, 1 and 2 make the material from replicated keys
  (:mod:`.replicated`); secure while at most one of those three colludes, with any number of the other
  parties. CrypTen's own dealer-bound protocols are refused under it.
* ``tfp`` (CrypTen's default "trusted first party"): party 0 generates all correlated randomness in
  plaintext and can therefore recover every other party's inputs from the values it legitimately sees.
  Development only; :class:`mpcdp.config.MpcConfig` refuses it without ``insecure_dev=True``.

To extend: a new kind of material is one class in :mod:`.material` (``fetch``, ``serve``, ``from_dealer``
and ``generate``) added to ``KINDS``; nothing else changes. A new provider is one record in
:mod:`mpcdp.providers` (its "How to add a provider").
"""

from mpcdp.adapter import dealer_view, keyed, metering, replicated
from mpcdp.adapter.compat import install_torch_compat  # noqa: F401
from mpcdp.adapter.dealer import run_dealer  # noqa: F401
from mpcdp.adapter.group import provider, rank, world_size  # noqa: F401
from mpcdp.adapter.keyed import unkeyed_draws  # noqa: F401
from mpcdp.adapter.material import (  # noqa: F401
    AndShifted, ChunkOneHots, CommitteeScope, FactorTables, MaskedBits, OneHotPairs, Products, TruncPairs, WordBits,
    deals_factor_tables, shift_word)
from mpcdp.adapter.bounded_masks import BoundedMaskSquares, BoundedMasks  # noqa: F401
from mpcdp.adapter.lanes import move_one_hots, moved_one_hots, rotate_lanes  # noqa: F401
from mpcdp.adapter.metering import dealer_requests_made  # noqa: F401
from mpcdp.adapter.replicated import bytes_sent as material_bytes_sent  # noqa: F401
from mpcdp.adapter.session import (  # noqa: F401
    beaver_multiply, crypten_randn, start_party, stop_party)

metering.install()
keyed.install()



def recorded_dealer_view() -> list | None:
    """The dealer's recorded view (:mod:`.dealer_view`), or None where it is not recorded."""
    return dealer_view.RECORDED


record_dealer_view = dealer_view.start


def keyed_words() -> int:
    """Words this process drew from CSPRNG-keyed streams: CrypTen's generators and the dealer-free provider's."""
    return keyed.keyed_words() + replicated.words_drawn()


def replicated_arithmetic(members) -> "replicated.ReplicatedArithmetic | None":
    """The run's provider's replicated arithmetic for a computation among ``members`` (its optional capability
    ``replicated_arithmetic``, :mod:`mpcdp.providers`), or None: then multiplications use its Beaver material."""
    offer = getattr(provider(), "replicated_arithmetic", None)
    return None if offer is None else offer(tuple(members))


dealer_word_bits = WordBits.fetch
dealer_bounded_masks = BoundedMasks.fetch
dealer_bounded_mask_squares = BoundedMaskSquares.fetch
dealer_masked_bits = MaskedBits.fetch
dealer_trunc_pairs = TruncPairs.fetch
dealer_products = Products.fetch
dealer_and_shifted = AndShifted.fetch
dealer_one_hot_pairs = OneHotPairs.fetch
dealer_chunk_one_hots = ChunkOneHots.fetch
dealer_factor_tables = FactorTables.fetch
committee_scope = CommitteeScope.fetch
