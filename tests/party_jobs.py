"""Party functions used by the tests (module-level so spawned processes can import them)."""

from __future__ import annotations

import os
import signal
import time

import torch

from mpcdp import adapter
from mpcdp.config import covers_malicious
from crypten_view import record_view
from mpcdp.mpc.bounded import witness as honest_witness
from mpcdp.mpc.multiply import multiply
from mpcdp.mpc.secure_sum import secure_sum


def sum_several(ctx, locals_: list[torch.Tensor], weight: float = 1.0):
    """Securely sum each of this party's tensors; return the opened sums (and the bytes measured)."""
    opened = []
    for i, local in enumerate(locals_):
        shared = secure_sum(ctx, local, weight=weight)
        opened.append(ctx.reveal(shared, label=f"sum{i}", reason="test"))
    return {"opened": opened, "openings": [(o.label, o.elements) for o in ctx.openings if o.kind != "public"],
            "rounds": ctx.rounds}


def sum_once(ctx, local):
    shared = secure_sum(ctx, local)
    return ctx.reveal(shared, label="sum", reason="test")


def raise_at(ctx, victim: int):
    shared = secure_sum(ctx, torch.ones(4))
    if ctx.rank == victim:
        raise RuntimeError(f"deliberate failure injected at party {victim}")
    return ctx.reveal(shared, label="sum", reason="test")


def killed_mid_protocol(ctx, victim: int):
    """The victim SIGKILLs itself after the shares exist and before the opening."""
    shared = secure_sum(ctx, torch.ones(1000))
    if ctx.rank == victim:
        os.kill(os.getpid(), signal.SIGKILL)
    return ctx.reveal(shared, label="sum", reason="test")


def progress_slowly(ctx, openings: int, pause_s: float):
    """``openings`` secure sums, each opened, with a pause before each: a run that keeps progressing."""
    total = 0.0
    for i in range(openings):
        time.sleep(pause_s)
        total += float(ctx.reveal(secure_sum(ctx, torch.ones(2)), label=f"sum{i}", reason="test")[0])
    return total


def hang_at(ctx, victim: int):
    shared = secure_sum(ctx, torch.ones(4))
    if ctx.rank == victim:
        time.sleep(3600)
    return ctx.reveal(shared, label="sum", reason="test")


def product_with_view(ctx, x: torch.Tensor | None, y: torch.Tensor | None, n: int):
    """Party 1 owns x, party 2 owns y; all compute x·y. Party 0 records its view and tries to recover x
    as ε + a, which works exactly when party 0 knows the triple's a in plaintext (the tfp provider)."""
    sx = ctx.input_from(1, x, (n,), field="x")
    sy = ctx.input_from(2, y, (n,), field="y")
    with record_view() as view:
        product = multiply(ctx, sx, sy)
    opened_product = ctx.reveal(product, label="product", reason="test output")
    result = {"product": opened_product, "x": x, "y": y}
    if ctx.rank == 0:
        epsilon = view.opened[0]  # the batched opening of (ε, δ) is recorded as ε, then δ
        a_guess = view.generated[0]  # the first ring element tensor party 0 generated: a (tfp) or its share
        recovered = (epsilon + a_guess).to(torch.float64) / ctx.scale
        result.update(recovered_x=recovered, epsilon=epsilon)
    return result


def standalone_process(rank: int, parties: int, rendezvous: str, timeout_s: float, victim: int, out,
                       credentials: str):
    """A process started without the harness (as on its own host): report how its run ended. ``credentials``:
    its deployment (MPCDP_CREDENTIALS), set here, since a process forked from the preloaded server has the
    server's environment, not its starter's."""
    import os

    from mpcdp.config import MpcConfig
    from mpcdp.runtime.party import run_dealer, run_party

    os.environ["MPCDP_CREDENTIALS"] = credentials
    config = MpcConfig(parties=parties, timeout_s=timeout_s)
    start = time.monotonic()
    try:
        if rank == parties:
            run_dealer(config=config, rendezvous=rendezvous)
        else:
            run_party(rank=rank, config=config, rendezvous=rendezvous, fn=hang_at, args=(victim,), job={})
        out.put((rank, "ok", time.monotonic() - start, ""))
    except Exception as exc:  # noqa: BLE001
        out.put((rank, type(exc).__name__, time.monotonic() - start, str(exc)))


def ring_ops(ctx, n: int, seed: int):
    """Run every integer protocol on public test values shared by party 0; return opened results."""
    from mpcdp.mpc import ring, ripple

    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-(2**30), 2**30, (n,), generator=g)
    y = torch.randint(-(2**30), 2**30, (n,), generator=g)
    w1 = torch.randint(0, 2**62, (n,), generator=g)
    w2 = torch.randint(0, 2**62, (n,), generator=g)
    big = torch.randint(-(2**50), 2**50, (n,), generator=g)
    small = torch.randint(-5, 6, (n,), generator=g)
    huge = torch.randint(-(2**61), 2**61, (n,), generator=g)

    def share(v, binary=False):
        if binary:
            return v.clone() if ctx.rank == 0 else torch.zeros_like(v)
        return ctx.masked_input(v if ctx.rank == 0 else torch.zeros_like(v))._share

    def open_(v, xor=False):
        return ctx.open_masked([v], label="test-output", xor=xor)[0]

    (prod,) = ring.mul(ctx, [(share(x), share(y))])
    (conj,) = ring.and_words(ctx, [(share(w1, True), share(w2, True))])
    bits = ring.b2a_bits(ctx, share(w1 & 0xFFFF, True), 16)
    trunc = ring.truncate(ctx, share(big), 20, 52)
    trunc_redrawn = ring.truncate(ctx, share(big), 20, 61)  # a wide bound: ~1/4 of the masks are redrawn
    signs_big = ring.ge_zero(ctx, share(big), 52)
    signs_small = ring.ge_zero(ctx, share(small), 3)
    signs_huge = ring.ge_zero(ctx, share(huge), 62)
    narrow = w2 & ((1 << 21) - 1)  # every carry pattern, and the extremes at both ends
    narrow[:2] = torch.tensor([0, (1 << 21) - 1])
    lifted, extra, _ = ripple.b2a_by_ripple(ctx, share(narrow, True), 21, share(w1 >> 40, True), 4,
                                            [43, 64, 1, 30, 64], label="test-ripple")
    # with the dealt squares: x² mod 2^62 too, the carry's bit among the masks (with and without extra bits)
    squared = ripple.b2a_by_ripple(ctx, share(narrow, True), 21, share(w1 >> 40, True), 4, [43, 64, 1, 30, 64],
                                   label="test-ripple-sq", square_width=62)
    alone = ripple.b2a_by_ripple(ctx, share(narrow, True), 21, share(w1, True), 0, [43], label="test-ripple-sq0",
                                 square_width=64)
    return {"x": x, "y": y, "w1": w1, "w2": w2, "big": big, "small": small, "narrow": narrow,
            "lifted": open_(lifted), "extra": open_(extra), "sq_lifted": open_(squared.value),
            "sq_extra": open_(squared.bits), "sq_square": open_(squared.square), "sq0_lifted": open_(alone.value),
            "sq0_square": open_(alone.square), "sq0_bits": tuple(alone.bits.shape),
            "prod": open_(prod), "and": open_(conj, xor=True), "bits": open_(bits),
            "value": open_(ring.bits_to_value(bits)), "trunc": open_(trunc),
            "trunc_redrawn": open_(trunc_redrawn),
            "ge_big": signs_big, "ge_small": signs_small, "huge": huge, "ge_huge": signs_huge}


def rou_samples(ctx, count: int, sigma: float, seed: int | None):
    """Draw `count` samples inside the MPC and open them (validation only)."""
    import numpy as np

    from mpcdp.noise.rou import RouStats, sample_rou

    rng = None if seed is None else np.random.default_rng([seed, ctx.rank])
    stats = RouStats()
    noise = sample_rou(ctx, count, sigma=sigma, rng=rng, stats=stats)
    values = ctx.reveal(noise, label="noise-validation", reason="test: validate the sampler")
    return {"values": values, "candidates": stats.candidates, "accepted": stats.accepted, "passes": stats.passes,
            "openings": [(o.label, o.elements) for o in ctx.openings if o.kind != "public"], "bytes": ctx.wire.bytes_sent}


def noise_modes(ctx, mode: str, count: int, sigma: float, colluders: int, seed: int | None):
    """Sample noise in a mode; open it (validation only); also return this party's own contribution."""
    from mpcdp.learning.mechanisms import NoiseSpec, sample_noise

    spec = NoiseSpec(sigma=sigma, mode=mode, colluders=colluders, seed=seed)
    block = sample_noise(ctx, spec, (count,))
    values = ctx.reveal(block.values, label="noise-validation", reason="test")
    own = None
    if mode == "distributed":  # this party's share is its own noise, in grid units
        from mpcdp.mpc.shared import share_of
        own = share_of(block.values).to(torch.float64).numpy() * 2.0**-block.values.precision_bits
    return {"values": values, "event": repr(block.event), "sigma": block.sigma, "support": block.support,
            "own": own, "openings": [label for label, _ in [(o.label, o.elements) for o in ctx.openings if o.kind != "public"]]}


def profiled_rou(ctx, count: int):
    import cProfile
    import io
    import pstats

    from mpcdp.noise.rou import sample_rou

    profiler = cProfile.Profile()
    profiler.enable()
    sample_rou(ctx, count)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(18)
    return out.getvalue()


def noisy_aggregation_steps(ctx, local_rows: torch.Tensor, sigma: float):
    """Pre-sample a T×d secret-shared noise block, then per step add row t to the secure aggregate."""
    from mpcdp.learning.mechanisms import NoiseSpec, sample_noise

    steps, dim = local_rows.shape
    block = sample_noise(ctx, NoiseSpec(sigma=sigma, sensitivity=1.0), (steps, dim))
    released = []
    for t in range(steps):
        noisy = secure_sum(ctx, local_rows[t]) + block.row(t)
        released.append(ctx.reveal(noisy, label=f"noisy-aggregate-{t}", reason="the DP release of step t"))
    return {"released": torch.stack(released), "event": repr(block.event),
            "openings": [o.label for o in ctx.openings if o.kind != "public" and not o.label.startswith("rou-")]}


def srm_party(ctx, shard, params, noise, dim, runner=None):
    from mpcdp.learning.backends import mpc_party
    from mpcdp.learning.dpsrm import run_srm

    return mpc_party(ctx, shard, params, noise, dim, runner or run_srm)


def release_steps(ctx, locals_: list[torch.Tensor], noise: list[torch.Tensor] | None):
    """Release Σ local + noise once per entry, with party 0 sharing the (test-chosen) noise vectors."""
    from mpcdp.mpc.release import noisy_release

    opened = []
    for t, local in enumerate(locals_):
        shape = (locals_[0].numel(),)
        shared_noise = None if noise is None else ctx.input_from(0, noise[t] if ctx.rank == 0 else None, shape,
                                                                 field="noise")
        opened.append(noisy_release(ctx, local, shared_noise, shape=shape, label=f"release{t}", field="terms"))
    return {"opened": opened, "rounds": ctx.rounds, "labels": [o.label for o in ctx.openings if o.kind != "public"]}


def count_with_progress(ctx, total: int):
    """Report progress 1..total with a secure sum at every step (the harness shows party 0's)."""
    for done in range(1, total + 1):
        ctx.reveal(secure_sum(ctx, torch.ones(2)), label=f"tick{done}", reason="test")
        ctx.progress(done, total)
    return ctx.steps


def metered_cases(ctx, big: int):
    """One of each small known case, every one in its own cost section; returns the ledgers and openings."""
    from mpcdp.mpc import ring
    from mpcdp.transport import costs
    from mpcdp.learning.mechanisms import NoiseSpec, sample_noise

    out = {}

    def case(name, run):
        before = len(ctx.openings)
        first = adapter.dealer_requests_made()
        with costs.section() as ledger:
            value = run()
        out[name] = ledger.to_dict() | {"openings_list": [o.elements for o in ctx.openings[before:] if o.kind != "public"],
                                        "labels": [o.label for o in ctx.openings[before:] if o.kind != "public"],
                                        "first_dealer_request": first}
        return value

    x = torch.arange(4, dtype=torch.int64) * (ctx.rank + 1)
    case("opening", lambda: ctx.open_masked([torch.zeros(5, dtype=torch.int64)], label="open5"))
    case("opening_big", lambda: ctx.open_masked([torch.zeros(big, dtype=torch.int64)], label="open-big"))
    case("mul", lambda: ring.mul(ctx, [(x, x + 1)]))
    case("comparison", lambda: ring.ge_zero(ctx, x - 3, 62))
    case("secure_sum", lambda: secure_sum(ctx, torch.ones(7, dtype=torch.float64)))
    shared = ctx.input_from(0, torch.ones(4, dtype=torch.float64) if ctx.rank == 0 else None, (4,), field="x")
    case("crypten_mul", lambda: multiply(ctx, shared, shared))
    block = case("rou", lambda: sample_noise(ctx, NoiseSpec(sigma=1.0, mode="rou"), (40,)))
    out["rou"]["stats"] = dict(block.stats)
    case("distributed", lambda: sample_noise(ctx, NoiseSpec(sigma=1.0, mode="distributed"), (40,)))
    return out



def audited_srm(ctx, shard, params, noise, dim):
    """A DDP-SRM run through the real party path (mpc_party) with every disclosure's plaintext kept. The
    noise blocks are captured as they are sampled and opened only after the audited record is copied, so
    the test can compare what was opened with the secrets (that last opening is the test's, not the run's)."""
    import dataclasses

    from mpcdp.learning import backends
    from mpcdp.learning.dpsrm import run_srm
    from mpcdp.learning.mechanisms import MECHANISMS as NOISE_MODES

    ctx.keep_values = True
    blocks, locals_ = [], []
    mode = NOISE_MODES[noise.choice.mode]
    sample = mode.secure_rows

    def capturing_sample(*args, **kwargs):
        block = sample(*args, **kwargs)
        blocks.append(block)
        return block

    def capturing_run(shards, params_, aggregate, **kwargs):
        def recorded(t, local):
            locals_.append(local.clone())
            return aggregate(t, local)
        return run_srm(shards, params_, recorded, **kwargs)

    NOISE_MODES[mode.name] = dataclasses.replace(mode, secure_rows=capturing_sample)
    try:
        out = backends.mpc_party(ctx, shard, params, noise, dim, capturing_run)
    finally:
        NOISE_MODES[mode.name] = mode
    audited = [(o.label, o.elements, o.recipients, o.kind, o.values) for o in ctx.openings]
    noise_rows = torch.cat([ctx.reveal(b, label="test only", reason="audit").reshape(-1, dim) for b in blocks])
    grids = [b.precision_bits for b in blocks for _ in range(b.shape[0])]  # each row's release grid
    from mpcdp import adapter
    from mpcdp.mpc import bernoulli

    return {"openings": audited, "locals": torch.stack(locals_), "noise": noise_rows, "grids": grids,
            "unkeyed_draws": adapter.unkeyed_draws(), "keyed_words": adapter.keyed_words(),
            "released": torch.stack(out["result"].released), "precision_bits": ctx.config.precision_bits,
            "tables": bernoulli.tables_dealt(), "provider": ctx.config.provider}


def discrete_gaussian_pass(ctx, sigma_units: float, candidates: int, seed: int, planted: bool = False):
    """One pass of the in-MPC discrete Gaussian sampler with seeded party randomness; open every candidate's
    value (test only) next to the accept bits, and the metered cost of the pass. ``planted``: under the view
    audit's planted leak (the dealer's own-word tables)."""
    import contextlib

    from mpcdp.mpc import bernoulli

    import numpy as np

    from mpcdp.transport import costs
    from mpcdp.mpc.shared import Shared
    from mpcdp.noise import discrete_gaussian as dg
    from mpcdp.noise.secure_gaussian import _candidates, party_words

    plan = dg.plan_for(sigma_units)
    words = party_words(np.random.default_rng([seed, ctx.rank]))
    with ctx.committee(tuple(range(ctx.parties))), costs.section() as ledger, \
            bernoulli.planted_dealer_tables() if planted else contextlib.nullcontext():
        result = _candidates(ctx, plan, candidates, words)  # as the sampler runs it: star kings rotate
    sampling = list(ctx.openings)
    values = ctx.reveal(Shared(result.value, 0), label="test-candidates", reason="test: compare with the plaintext rule")
    names = sorted(result.uniform)
    opened = ctx.open_masked([result.uniform[name] for name in names], label="test-uniform", xor=True)
    steps = [o for o in sampling if o.label.startswith("dg-")]
    return {"accepted": result.accepted, "survivors": result.survivors, "kept": result.kept,
            "uniform": dict(zip(names, opened)), "values": values.to(torch.int64),
            "ops": dict(ledger.ops),
            "openings": [(o.label, o.elements) for o in sampling if o.kind in ("masked", "comparison")],
            "coin": [(o.label, o.elements, o.bytes_sent) for o in sampling if o.kind == "coin"],
            "reshares": [(o.label, o.elements) for o in steps if o.kind == "share"],
            "step_bytes": sum(o.bytes_sent for o in steps), "rounds": ledger.rounds,
            "dealer_requests": ledger.dealer_requests,
            "material_requests": sum(ledger.material_requests.values())}


def single_candidate_passes(ctx, sigma_units: float, calls: int):
    """``calls`` passes of one candidate each: per pass, how many passed the first factor, whether it was
    accepted, and the sizes of the pass's sampling openings and resharings in order."""
    from mpcdp.noise import discrete_gaussian as dg
    from mpcdp.noise.secure_gaussian import _candidates, party_words

    plan, words, out = dg.plan_for(sigma_units), party_words(None), []
    for _ in range(calls):
        before = len(ctx.openings)
        result = _candidates(ctx, plan, 1, words)
        steps = [o.elements for o in ctx.openings[before:] if o.label.startswith("dg-") and o.kind != "coin"]
        out.append({"survivors": result.survivors, "accepted": bool(result.accepted.any()), "steps": steps})
    return out


def distributed_rows_party(ctx, release, rows: int, choice):
    """This party's share of the distributed noise (its own samples) and the opened sum (test only)."""
    from mpcdp.learning.mechanisms import MECHANISMS as NOISE_MODES
    from mpcdp.mpc.shared import share_of

    shares = NOISE_MODES["distributed"].secure_rows(ctx, release, rows, choice)
    return share_of(shares).clone(), ctx.reveal(shares, label="test: summed noise", reason="test only")


class PickleBomb:
    """Unpickling this runs ``open(path, "w")``: the file's existence shows that peer data was unpickled."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def deviate_on_the_wire(ctx, rogue: int, fault: str, at: int, log_dir: str):
    """Four rounds of secure sum + opening (label "sum" every round); each party appends the round to its
    log once the round's sum is released. At round ``at`` party ``rogue`` sends ``fault`` to party 0 in
    place of its share (or, for "json-pickle", in place of its public metadata), then stays connected."""
    import pickle

    from mpcdp.transport import frames

    mesh = ctx._mesh
    sent_to_0: list[bytes] = []
    if ctx.rank == rogue:
        original = mesh._send_some

        def recording(link, queue):
            if link is mesh.links[0]:
                sent_to_0.append(bytes(queue[0]))
            return original(link, queue)

        mesh._send_some = recording
    for r in range(4):
        if fault == "json-pickle" and r == at:
            if ctx.rank == rogue:
                bomb = pickle.dumps(PickleBomb(os.path.join(log_dir, "executed")))
                header = frames.HEADER.pack(frames.MAGIC, frames.VERSION, frames.JSON, mesh._next_out[0],
                                            frames.tag_of("status"), len(bomb))
                mesh.links[0].setblocking(True)
                mesh.links[0].sendall(header + bomb)
                time.sleep(60)
            ctx.exchange_public({"round": r}, label="status")
        shared = secure_sum(ctx, torch.ones(50))
        if ctx.rank == rogue and r == at and fault != "json-pickle":
            number, tag, length = mesh._next_out[0], frames.tag_of("sum"), 8 * 50
            payload = bytes(length)
            bad = {
                "short": frames.HEADER.pack(frames.MAGIC, frames.VERSION, frames.INT64, number, tag, length)
                + payload[: length // 2],
                "long": frames.HEADER.pack(frames.MAGIC, frames.VERSION, frames.INT64, number, tag, length + 8)
                + payload + bytes(8),
                "tag": frames.HEADER.pack(frames.MAGIC, frames.VERSION, frames.INT64, number,
                                          frames.tag_of("another step"), length) + payload,
                "type": frames.HEADER.pack(frames.MAGIC, frames.VERSION, frames.FLOAT64, number, tag, length)
                + payload,
                "garbage": os.urandom(16 + length),
                "pickle": pickle.dumps(PickleBomb(os.path.join(log_dir, "executed"))),
                "replay": sent_to_0[-2],  # the previous round's share, frame and all (small: one write)
            }[fault]
            mesh.links[0].setblocking(True)
            mesh.links[0].sendall(bad)
            time.sleep(60)
        ctx.reveal(shared, label="sum", reason="test")
        with open(os.path.join(log_dir, f"released-{ctx.rank}"), "a") as log:
            log.write(f"{r}\n")
    return "done"


def rogue_dealer_request(ctx, what: str, log_dir: str):
    """Party 0 sends the dealer something it does not serve: a method that is not a material kind, a torch
    operation other than a Beaver product's, or a pickle."""
    import pickle

    from mpcdp.adapter.compat import ttp_provider

    if ctx.rank == 0:  # a rogue party 0 sends the raw request: its own client refuses to make these
        from mpcdp.transport import public

        client = ttp_provider.TTPClient.get()
        if what == "pickle":  # a well-framed request whose payload is a pickle, not JSON
            raw = pickle.dumps(PickleBomb(os.path.join(log_dir, "executed")))
            client.mesh.exchange_text({client.dealer: raw}, [], label="dealer request")
            time.sleep(60)
        else:
            function, args = ("_setup_generators", []) if what == "method" else ("additive", [[2], [2], "save"])
            raw = public.encode({"function": function, "device": None, "args": args, "kwargs": {}})
            client.mesh.exchange_text({client.dealer: raw}, [], label="dealer request")
            client.mesh.exchange_text({}, [client.dealer], label="dealer reply shape", limit=4096)
    return sum_once(ctx, torch.ones(3))


def every_message_on_mpcdp_links(ctx, n: int):
    """A secure sum and a CrypTen multiplication (dealer material, CrypTen's all-reduce and, for 3 parties,
    its wraps gather): what ran, how each link is protected, and whether torch.distributed has a group."""
    import torch.distributed as dist

    from mpcdp.adapter.compat import ttp_provider

    local = torch.arange(n, dtype=torch.float64) * (ctx.rank + 1)
    total = ctx.reveal(secure_sum(ctx, local), label="sum", reason="test")
    x = torch.linspace(-2.0, 2.0, n, dtype=torch.float64)
    sx = ctx.input_from(1, x if ctx.rank == 1 else None, (n,), field="x")
    sy = ctx.input_from(2, x.flip(0) if ctx.rank == 2 else None, (n,), field="y")
    product = ctx.reveal(multiply(ctx, sx, sy), label="product", reason="test")
    return {"sum": total, "product": product, "links": ctx.links,
            "dealer_link": ttp_provider.TTPClient.get().mesh.protection, "process_group": dist.is_initialized()}


def first_secret_words(ctx):
    """The first words this party's local generator and its dealer generator draw (secret in a real run)."""
    from mpcdp.adapter import keyed
    from mpcdp.adapter.compat import crypten, ttp_provider

    local = keyed.ring((4,), generator=crypten.generators["local"][torch.device("cpu")])
    dealer = keyed.ring((4,), generator=ttp_provider.TTPClient.get().get_generator())
    return {"local": local.tolist(), "dealer": dealer.tolist(), "pid": os.getpid()}


def torch_threads(ctx):
    """This party process's torch intra-op thread count."""
    return torch.get_num_threads()


def threads_and_refaults(ctx):
    """This party process's torch intra-op thread count, and the minor page faults of writing a 64 MiB block
    of the C heap a second time, after freeing it (0 where the process keeps freed blocks for reuse)."""
    import ctypes
    import resource

    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_size_t], [ctypes.c_void_p]
    size, faults = 64 << 20, []
    for _ in range(2):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        block = libc.malloc(size)
        ctypes.memset(block, 1, size)
        libc.free(block)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return {"threads": torch.get_num_threads(), "refaults": faults[1]}


def dp_accounting_imported(ctx):
    """Whether this party process started with dp-accounting imported (from the fork server's preload)."""
    import sys

    return "dp_accounting" in sys.modules


def crypten_interop(ctx, value):
    """mpcdp's secure sum handed to CrypTen and back, and a CrypTen input handed to mpcdp."""
    from mpcdp.adapter.compat import crypten
    from mpcdp.mpc.crypten_interop import from_crypten, to_crypten
    from mpcdp.mpc.secure_sum import secure_sum
    from mpcdp.mpc.shared import share_of

    total = secure_sum(ctx, value)
    openings, sent, rounds = len(ctx.openings), ctx.wire.bytes_sent, ctx.rounds
    back = from_crypten(to_crypten(total))
    round_trip = {"openings": len(ctx.openings) - openings, "bytes": ctx.wire.bytes_sent - sent,
                  "rounds": ctx.rounds - rounds, "same_share": torch.equal(share_of(back), share_of(total)),
                  "precision_bits": (back.precision_bits, total.precision_bits)}
    as_crypten = to_crypten(total)
    squared = from_crypten(as_crypten * as_crypten)  # CrypTen's multiplication on mpcdp's sum
    positive = from_crypten((as_crypten > 0).to(crypten.mpc.binary))  # binary-shared: converted back by B2A
    party0 = from_crypten(crypten.cryptensor(value, src=0))  # CrypTen's input sharing, opened by mpcdp
    return {"round_trip": round_trip,
            "sum": ctx.reveal(total, label="sum", reason="test"),
            "squared": ctx.reveal(squared, label="squared", reason="test"),
            "positive": ctx.reveal(positive, label="positive", reason="test"),
            "party0": ctx.reveal(party0, label="party 0's input", reason="test"),
            "opened": [o.label for o in ctx.openings if o.kind == "release"]}


def agree_or_refuse(ctx, description):
    """The data agreement's outcome on this party: every party's record count, or the refusal."""
    from mpcdp.mpc.data_agreement import agree_on_data
    from mpcdp.errors import MpcdpError

    try:
        return {"sizes": agree_on_data(ctx, description)}
    except MpcdpError as exc:
        return {"error": type(exc).__name__, "message": str(exc), "party": exc.party}


def material_of_every_kind(ctx, n: int):
    """Every kind of correlated randomness once (the run's provider), with what each request cost."""
    from mpcdp.transport import costs

    with costs.section() as ledger:
        out = {"products": adapter.dealer_products(n, 3, [(0, 1), (2, 2)]),
               "ands": adapter.dealer_and_shifted(n, 2, [(0, 1, 3), (1, 0, -5)]),
               "merged_ands": adapter.dealer_and_shifted(n, 2, [(0, 1, 3), (1, 0, -5)], [0xFF00, -256]),
               "word_bits": adapter.dealer_word_bits(n, 13),
               "bounded": adapter.dealer_bounded_masks(n, 21),
               "bounded_squares": tuple(adapter.dealer_bounded_mask_squares(n, 21, 62)),
               "masked40": adapter.dealer_masked_bits(n, 40),
               "masked62": adapter.dealer_masked_bits(n, 62),
               "masked64": adapter.dealer_masked_bits(n, 64),
               "trunc": adapter.dealer_trunc_pairs(n, 16),
               "one_hots": adapter.dealer_one_hot_pairs(n, [(0, 6), (20, 3), (58, 6)]),
               "chunk_hots62": adapter.dealer_chunk_one_hots(n, 62),
               "chunk_hots64": adapter.dealer_chunk_one_hots(n, 64)}
    out["ledger"] = ledger.to_dict()
    return out


def material_and_provider(ctx, n: int):
    """A product and comparison masks from the run's provider, with the provider's name and what it counted
    serving (a provider without a ``served`` count: None)."""
    record = adapter.provider()
    products = adapter.dealer_products(n, 2, [(0, 1)])
    masked = adapter.dealer_masked_bits(n, 40)
    return {"provider": record.name, "served": dict(getattr(record, "served", None) or {}) or None,
            "products": products, "masked": masked}


def coalition_view(ctx, x: torch.Tensor | None, n: int):
    """Beaver product of the victim's private x (its additive input: the others hold 0) with itself, as the
    first material of the run; returns the opened ε = x − a and the part of the mask a this party can
    re-derive from the component keys it holds (all of a's components a coalition holds add up)."""
    from mpcdp.adapter import replicated
    from mpcdp.mpc import ring

    share = x if x is not None else torch.zeros(n, dtype=torch.int64)
    products = ring.BeaverProducts(ctx, n, 1, [(0, 0)], label="coalition")  # the material's own property
    products.open({0: share})
    source = adapter.provider().source  # the honest-majority provider's ReplicatedSource
    known = {k: replicated.component_stream(key).words(n) for k, key in source.component_keys.items()}
    return {"epsilon": products.eps[0], "components": known}


def _received_while(make) -> list[torch.Tensor]:
    """Every message this party receives from the dealer-free provider's generators while ``make()`` runs, one
    tensor per message, in order (its whole incoming view of that material)."""
    source = adapter.provider().source  # the honest-majority provider's ReplicatedSource
    seen = []
    exchange = source.mesh.exchange

    def recording(sends, receives, *, label):
        exchange(sends, receives, label=label)
        seen.extend(t.clone() for t in receives.values())

    source.mesh.exchange = recording
    try:
        make()
    finally:
        source.mesh.exchange = exchange
    return seen


def generator_one_view(ctx, n: int, one_hots: bool = False):
    """Comparison masks (``one_hots``: one-hot rotation pairs of two 6-bit windows) of the dealer-free provider,
    with every message this party receives while they are made, concatenated."""
    if one_hots:
        seen = _received_while(lambda: adapter.dealer_one_hot_pairs(n, [(0, 6), (6, 6)]))
    else:
        seen = _received_while(lambda: adapter.dealer_masked_bits(n, 40))
    return torch.cat(seen) if seen else torch.zeros(0, dtype=torch.int64)


def generator_views(ctx, n: int, what: str):
    """Every message this party receives while the dealer-free provider makes ``what`` ("chunks": chunk one-hot
    masks of 64 bits), one tensor per message, in order."""
    if what != "chunks":
        raise ValueError(f"`what` must be 'chunks'. Found {what!r}.")
    return _received_while(lambda: adapter.dealer_chunk_one_hots(n, 64))


def every_generator_view(ctx, bits: int, one_hots: int, chunks: int) -> dict:
    """One run's three views of the dealer-free provider, made one after the other, each recorded apart: the
    messages received while ``bits`` comparison masks of 40 bits are made, while ``one_hots`` one-hot rotation
    pairs are, and while ``chunks`` chunk one-hot masks of 64 bits are (:func:`generator_one_view`,
    :func:`generator_views`)."""
    return {"bits": generator_one_view(ctx, bits), "one_hots": generator_one_view(ctx, one_hots, True),
            "chunks": generator_views(ctx, chunks, "chunks")}


def forge_blame_then_garble(ctx, rogue: int, accused: int, at: int):
    """Rounds of secure sum + opening; at round ``at`` party ``rogue`` writes a loss report naming ``accused``
    (a garbled frame), then sends party 0 garbage in place of its share and stays connected."""
    from mpcdp.transport import rendezvous

    mesh = ctx._mesh
    for r in range(3):
        shared = secure_sum(ctx, torch.ones(50))
        if ctx.rank == rogue and r == at:
            rendezvous.publish_report(rogue, accused, "violation")
            mesh.links[0].setblocking(True)
            mesh.links[0].sendall(os.urandom(16 + 8 * 50))
            time.sleep(60)
        ctx.reveal(shared, label="sum", reason="test")
    return "done"


def short_frame_then_wait(ctx, rogue: int, at: int, honest_timeout: float, rogue_timeout: float | None):
    """Every party waits at most ``honest_timeout`` per round. At round ``at`` party ``rogue`` announces its
    share's frame to party 0 but sends 8 bytes less, then either waits for party 0's sum with a shorter
    timeout of its own (``rogue_timeout``: its own timeout fires, naming party 0, and it stops as mpcdp does)
    or, with None, writes a report naming party 0 itself and stays connected."""
    from mpcdp.transport import frames, rendezvous

    mesh = ctx._mesh
    mesh.timeout_s = honest_timeout
    for r in range(3):
        shared = secure_sum(ctx, torch.ones(50))
        if ctx.rank == rogue and r == at:
            length = 8 * 50
            header = frames.HEADER.pack(frames.MAGIC, frames.VERSION, frames.INT64, mesh._next_out[0],
                                        frames.tag_of("sum"), length)
            mesh.links[0].setblocking(True)
            mesh.links[0].sendall(header + bytes(length - 8))
            mesh.links[0].setblocking(False)
            mesh._next_out[0] += 1
            if rogue_timeout is None:
                rendezvous.publish_report(rogue, 0, "timeout")
                time.sleep(60)
            mesh.timeout_s = rogue_timeout
            mesh.exchange({}, {0: torch.empty(50, dtype=torch.int64)}, label="sum (sum)")
        ctx.reveal(shared, label="sum", reason="test")
    return "done"


def credentials_in_use(ctx, fail_at: int, note: str):
    """What the launcher gave this party to secure its links: the folder, its mode and files, and the links'
    protection; party ``fail_at`` writes the folder's path to ``note`` and fails."""
    import stat

    from mpcdp.runtime.party import current_settings

    folder = current_settings().credentials
    if ctx.rank == fail_at:
        with open(note, "w") as fh:
            fh.write(folder or "")
        raise RuntimeError(f"deliberate failure at party {fail_at}")
    return {"folder": folder, "mode": stat.S_IMODE(os.stat(folder).st_mode) if folder else None,
            "files": sorted(os.listdir(folder)) if folder else [], "links": ctx.links}


def separate_process(rank: int, parties: int, rendezvous: str, timeout_s: float, environ: dict, log_path: str,
                     out):
    """A process started on its own, as on its own host, with ``environ`` (its credentials), its output in
    ``log_path``: each party opens the sum of the ranks; reports (rank, outcome, value)."""
    import sys

    from mpcdp.config import MpcConfig
    from mpcdp.runtime.party import run_dealer, run_party

    os.environ.clear()
    os.environ.update(environ)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    config = MpcConfig(parties=parties, timeout_s=timeout_s)
    try:
        if rank == parties:
            run_dealer(config=config, rendezvous=rendezvous)
            out.put((rank, "ok", None))
        else:
            value = run_party(rank=rank, config=config, rendezvous=rendezvous, fn=sum_once,
                              args=(torch.full((3,), float(rank)),), job={"fn": "sum_once"})
            out.put((rank, "ok", value.tolist()))
    except BaseException as exc:  # noqa: BLE001 - the test reads how it ended
        out.put((rank, type(exc).__name__, str(exc)))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def run_environment(ctx):
    """What a party process finds of mpcdp's own in its environment, the plugins it imported, and its links."""
    import sys

    return {"mpcdp_variables": sorted(k for k in os.environ if k.startswith("MPCDP_")),
            "toy_provider_imported": "toy_provider" in sys.modules, "links": ctx.links}


def committee_noise(ctx, count: int, sigma_units: float):
    """``count`` in-MPC discrete Gaussian draws (the run's noise committee samples), with this party's share,
    its disclosures during the sampling and its bytes; then the draws opened (test only)."""
    from mpcdp.mpc.shared import Shared
    from mpcdp.noise import discrete_gaussian as dg
    from mpcdp.noise.secure_gaussian import sample_discrete_gaussian

    before, sent = len(ctx.openings), ctx._mesh.bytes_sent
    stats: dict = {}
    share = sample_discrete_gaussian(ctx, count, dg.plan_for(sigma_units), stats=stats)
    seen = [(o.label, o.recipients, o.kind) for o in ctx.openings[before:]]
    sent = ctx._mesh.bytes_sent - sent
    values = ctx.reveal(Shared(share, 0), label="test-noise", reason="test: the committee's noise")
    return {"share": share, "openings": seen, "bytes_sent": sent, "stats": stats,
            "values": values.to(torch.int64), "members": ctx.committee_members()}


def replicated_products(ctx, x: torch.Tensor | None, n: int, seed: int):
    """Shifted ANDs and ring products of seeded random shares a, b (this party's from ``[seed, rank]``) and of a
    victim's private x (its own share, the others hold 0: not a proper sharing) with the run's multiplication
    (:func:`mpcdp.mpc.ring.ShiftedAnds`, :func:`~mpcdp.mpc.ring.Products`), and the same with Beaver's; with what
    this party received while resharing (its audit records, kind ``share``) and the two shares it then holds
    of x."""
    import numpy as np

    from mpcdp.mpc import ring

    ctx.keep_values = True
    rng = np.random.default_rng([seed, ctx.rank])
    a, b = (torch.from_numpy(rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64, endpoint=True))
            for _ in range(2))
    victim = x if x is not None else torch.zeros(n, dtype=torch.int64)
    and_pairs, mul_pairs = [(0, 1, 3), (1, 0, -5), (0, 0, 7), (2, 1, 0)], [(0, 1), (1, 1), (2, 2)]
    before = len(ctx.openings)
    out = {"kind": {}}
    for name, make in (("ands", ring.ShiftedAnds), ("beaver_ands", ring.BeaverShiftedAnds)):
        ands = make(ctx, n, 3, and_pairs, label=f"test-{name}")
        ands.open({0: a, 1: b, 2: victim})
        out[name] = [ands.product(u, v, s) for u, v, s in and_pairs]
        out["kind"][name] = type(ands).__name__
        out[f"{name}_held"] = getattr(ands, "held", {}).get(2)
    for name, make in (("products", ring.Products), ("beaver_products", ring.BeaverProducts)):
        products = make(ctx, n, 3, mul_pairs, label=f"test-{name}")
        products.open({0: a, 1: b, 2: victim})
        out[name] = [products.product(u, v) for u, v in mul_pairs]
        out["kind"][name] = type(products).__name__
        out[f"{name}_held"] = getattr(products, "held", {}).get(2)
    out["received"] = [(o.label, o.elements, o.recipients, o.values) for o in ctx.openings[before:]
                       if o.kind == "share"]
    return out


def oversized_reshare(ctx, rogue: int, n: int):
    """A replicated AND of n words per variable; party ``rogue`` sends its resharing message one word too
    long (its frame says so), then goes on as if nothing happened."""
    from mpcdp.mpc import ring

    mesh = ctx._mesh
    if ctx.rank == rogue:
        exchange = mesh.exchange

        def padded(sends, receives, *, label):
            if label == "test-rogue":
                sends = {j: torch.cat([t, t[:1]]) for j, t in sends.items()}
            exchange(sends, receives, label=label)

        mesh.exchange = padded
    x = torch.arange(n, dtype=torch.int64)
    ands = ring.ShiftedAnds(ctx, n, 2, [(0, 1, 0)], label="test-rogue")
    ands.open({0: x, 1: x})
    return ands.product(0, 1, 0)


def chunk_conversions(ctx, narrow: torch.Tensor, wide: torch.Tensor):
    """XOR shares of party 0's integers by :func:`mpcdp.mpc.binary.to_binary_by_chunks`, opened (test only): ``wide``
    (any int64) at 64 bits, ``narrow`` (< 2^62) at 62, 40, 8 and 3 bits; with each conversion's metered cost and
    its openings (label, kind, the opened values)."""
    from mpcdp.mpc import binary
    from mpcdp.transport import costs

    ctx.keep_values = True

    def share(v):
        return ctx.masked_input(v if ctx.rank == 0 else torch.zeros_like(v))._share

    out = {}
    for bits, values in ((62, narrow), (64, wide), (40, narrow), (8, narrow), (3, narrow)):
        before = len(ctx.openings)
        with costs.section() as ledger:
            converted = binary.to_binary_by_chunks(ctx, share(values), bits, label="a2b")
        out[bits] = {"openings": [(o.label, o.kind, o.elements, o.values) for o in ctx.openings[before:]],
                     "ops": dict(ledger.ops), "dealer_requests": ledger.dealer_requests, "bits": converted}
    for result in out.values():
        result["opened"] = ctx.open_masked([result.pop("bits")], label="test-output", xor=True)[0]
    return out


def rogue_strategy(ctx, strategy: str, rogue: int, accused: int, at: int, honest_timeout: float | None = None):
    """Rounds of secure sum + opening; at round ``at`` party ``rogue`` plays one of issue 45's strategies,
    each starting or ending with a loss report naming ``accused`` (``violation``) that it writes itself:
    ``a`` report, then close every link and return; ``b`` report, then stay silent with its links open;
    ``c`` half a frame to every data party, 1 s, report, close, return; ``d`` half a frame to ``accused``
    only, then report, close, return. Returns "rogue done" on the rogue (it exits 0). ``honest_timeout``: the
    parties' wait per step (the run's timeout otherwise)."""
    from mpcdp.transport import frames, rendezvous

    mesh = ctx._mesh
    if honest_timeout is not None:
        mesh.timeout_s = honest_timeout
    for r in range(3):
        shared = secure_sum(ctx, torch.ones(50))
        if ctx.rank == rogue and r == at:
            targets = {"c": list(mesh.links), "d": [accused]}.get(strategy, [])
            for j in targets:
                header = frames.HEADER.pack(frames.MAGIC, frames.VERSION, frames.INT64, mesh._next_out[j],
                                            frames.tag_of("sum"), 8 * 50)
                mesh.links[j].setblocking(True)
                mesh.links[j].sendall(header + bytes(8 * 25))
            if strategy == "c":
                time.sleep(1.0)
            rendezvous.publish_report(rogue, accused, "violation")
            if strategy == "b":
                time.sleep(120)
            mesh.close(orderly=False)
            return "rogue done"
        ctx.reveal(shared, label="sum", reason="test")
    return "done"


def crypten_collectives(ctx):
    """CrypTen's own calls on mpcdp's communicator: a reveal to party 1 only, and broadcasts from party 0 of a
    float32 and an int32 tensor into every party's own tensor."""
    from mpcdp.adapter.compat import crypten

    shared = crypten.cryptensor(torch.tensor([1.5, -2.25]), src=0)
    to_one = shared.get_plain_text(dst=1)
    comm = crypten.communicator.get()
    mine = torch.full((3,), float(ctx.rank), dtype=torch.float32)
    filled = comm.broadcast(mine, 0)
    counts = torch.tensor([7 * (ctx.rank + 1), 9], dtype=torch.int32)
    batched = comm.broadcast([counts], 0, batched=True)
    return {"to_one": to_one, "same_object": filled is mine, "mine": mine, "counts": counts,
            "batched_same": batched[0] is counts}


def crypten_generator_draws(ctx):
    """Four words drawn through torch directly from this party's CrypTen ``prev`` and ``next`` generators."""
    from mpcdp.adapter.compat import crypten

    cpu = torch.device("cpu")
    return {name: torch.randint(0, 2**62, (4,), generator=crypten.generators[name][cpu]) for name in ("prev", "next")}


def crypten_save_load(ctx, folder: str):
    """CrypTen's own saving and loading on mpcdp's parties: each party's shares through ``crypten.save`` /
    ``crypten.load``; a file naming another global, refused; a module party 0 saved, shared by
    ``crypten.load_from_party`` (its parameters zeroed off party 0, as CrypTen does); the tuple provider's
    cache through ``save_cache`` / ``load_cache``; an encrypted module's state dict."""
    import io
    import pickle

    from mpcdp.adapter.compat import crypten

    secret = crypten.cryptensor(torch.tensor([1.5, -2.25, 4.0]), src=0)
    saved = io.BytesIO()
    crypten.save(secret, saved)
    saved.seek(0)
    loaded = crypten.load(saved)
    hostile = io.BytesIO()
    torch.save({"payload": os.system}, hostile)
    hostile.seek(0)
    try:
        crypten.load(hostile)
        refusal = None
    except pickle.UnpicklingError as exc:
        refusal = str(exc)
    model = os.path.join(folder, "linear.pt")
    crypten.save_from_party(_sevens(), model, src=0)
    shared = crypten.load_from_party(model, src=0)
    return {"same_share": torch.equal(loaded.share, secret.share), "type": type(loaded).__name__,
            "plain": loaded.get_plain_text(), "refusal": refusal, "module": type(shared).__name__,
            "weights": shared.weight.detach().clone(), "bias_dtype": shared.bias.dtype, "src": shared.src,
            "cache_kept": _cache_round_trip(crypten.mpc.get_default_provider(), folder),
            "state_dict_kept": _state_dict_round_trip(crypten)}


def _state_dict_round_trip(crypten) -> bool:
    """An encrypted batch norm's state dict (its buffers name CrypTen's autograd functions as ``grad_fn``)
    saved by ``crypten.save`` and loaded into a fresh module."""
    import io

    module, fresh, saved = crypten.nn.BatchNorm1d(4).encrypt(), crypten.nn.BatchNorm1d(4).encrypt(), io.BytesIO()
    crypten.save(module.state_dict(), saved)
    saved.seek(0)
    fresh.load_state_dict(crypten.load(saved))
    return all(torch.equal(fresh.state_dict()[name].get_plain_text(), value.get_plain_text())
               for name, value in module.state_dict().items())


def _cache_round_trip(provider, folder: str) -> bool:
    """A request and a tuple cache as CrypTen's tracing fills them (the tuple cache's keys hold a frozenset of
    keyword arguments), saved and loaded back by the provider."""
    request = ("square", (torch.Size([2]),), {"device": torch.device("cpu")})
    key = ("square", (torch.Size([2]),), frozenset({("device", torch.device("cpu"))}))
    pair = (torch.arange(2), torch.ones(2, dtype=torch.int64))
    provider.request_cache, provider.tuple_cache = [request], {key: [pair]}
    provider.save_cache(folder)
    provider.load_cache(folder)
    requests, tuples = provider.request_cache, provider.tuple_cache
    provider.request_cache, provider.tuple_cache = [], {}
    return requests == [request] and set(tuples) == {key} and all(map(torch.equal, tuples[key][0], pair))


def _sevens() -> torch.nn.Linear:
    linear = torch.nn.Linear(3, 2)
    with torch.no_grad():
        linear.weight.fill_(7.0)
        linear.bias.fill_(7.0)
    return linear


@covers_malicious
def tampered_aggregate(ctx, rogue: int, label: str, where: str, how: str, log_dir: str):
    """The aggregation job's authenticated sum of (rank + 1)·ones(8) under ``security = "malicious"``, with party
    ``rogue`` deviating at its message tagged ``label`` ("flip": bit 62 of the message's first word; "offset": the
    word + 1). ``where`` = "share": it alters its share itself (the same altered words to every party, and in its
    own computation: a consistent lie); "wire:J": it alters only the frame's payload to party J (well formed, only
    the value is wrong). Each party writes what it released to ``released-<rank>`` once it has it (``rogue`` = −1:
    nobody deviates)."""
    from mpcdp.jobs.aggregate import reveal_aggregate

    def altered(data: bytearray) -> bytearray:
        word = int.from_bytes(data[:8], "little")
        word = word ^ (1 << 62) if how == "flip" else (word + 1) % (1 << 64)
        data[:8] = word.to_bytes(8, "little")
        return data

    if ctx.rank == rogue and where == "share":
        def lying(method):
            def sends(vector, *, label: str, **kwargs):
                if label == wanted:
                    vector = torch.frombuffer(altered(bytearray(vector.contiguous().numpy().tobytes())),
                                              dtype=torch.int64).reshape(vector.shape)
                return method(vector, label=label, **kwargs)
            return sends

        wanted = label
        ctx.members_exchange = lying(ctx.members_exchange)  # the MAC check's rounds
        ctx._open = lying(ctx._open)  # the masked inputs and the opening (authenticated.opened_checked)
    elif ctx.rank == rogue:
        mesh, to = ctx._mesh, int(where.split(":")[1])
        original = mesh._move

        def tampering(out, into, tag, *rest):
            if tag == label and to in out:
                out = {**out, to: (out[to][0], memoryview(altered(bytearray(out[to][1]))))}
            return original(out, into, tag, *rest)

        mesh._move = tampering
    from mpcdp.mpc.release import noisy_release

    total = reveal_aggregate(ctx, torch.full((8,), float(ctx.rank + 1), dtype=torch.float64))
    with open(os.path.join(log_dir, f"released-{ctx.rank}"), "w") as log:
        log.write(" ".join(str(v) for v in total.tolist()))
    if rogue >= 0:
        return total.tolist()
    release = noisy_release(ctx, torch.full((2, 3), 0.25 * ctx.rank, dtype=torch.float64), None, shape=(2, 3),
                            label="release")  # the training release's path, without noise
    return total.tolist(), release.tolist()


@covers_malicious
def authenticated_products(ctx, n: int, seed: int, rogue: int):
    """Under ``security = "malicious"``: party 0 inputs x, party 1 inputs y (uniform int64 words from ``seed``),
    authenticated one by one; every party computes [[x·y]] (:func:`mpcdp.mpc.authenticated.multiply`), [[y²]]
    (:func:`~mpcdp.mpc.authenticated.square`) and [[3x − y + 5]], [[x·2^40]] (the local helpers), opens them and MAC-checks. Then a second product, for which
    party ``rogue`` flips bit 62 of the first word of its ε share (the same altered words to every party): every
    party's check must fail. Returns (the opened words, the second check's failure line or None)."""
    from mpcdp.errors import MacCheckFailed
    from mpcdp.mpc import authenticated as auth

    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-(2 ** 63), 2 ** 63 - 1, (n,), generator=g, dtype=torch.int64)
    y = torch.randint(-(2 ** 63), 2 ** 63 - 1, (n,), generator=g, dtype=torch.int64)
    own = x if ctx.rank == 0 else y if ctx.rank == 1 else torch.zeros(n, dtype=torch.int64)
    inputs = auth.input_vectors(ctx, own, precision=0, label="inputs")
    xs, ys = inputs[0], inputs[1]
    product = auth.multiply(ctx, xs, ys, label="product")
    combined = auth.linear(ctx, [(3, xs), (-1, ys)], constant=5)
    scaled = xs.mul_public(torch.tensor(1 << 40))
    squared = auth.square(ctx, ys, label="square")
    opened = [auth.open_values(ctx, v, label=f"out{i}", reason="test output")
              for i, v in enumerate((product, combined, scaled, squared))]
    auth.mac_check(ctx, label="products")
    if ctx.rank == rogue:
        original = ctx._open

        def lying(vector, *, label: str, **kwargs):
            if label == "flipped (ε, δ)":
                vector = vector.clone()
                vector.view(-1)[0] ^= 1 << 62
            return original(vector, label=label, **kwargs)

        ctx._open = lying
    failure = None
    try:
        auth.open_values(ctx, auth.multiply(ctx, xs, ys, label="flipped"), label="flipped", reason="test output")
        auth.mac_check(ctx, label="flipped")
    except MacCheckFailed as error:
        failure = str(error)
    return [o.tolist() for o in opened], failure


BOUND_CASES = {  # contributions in grid units, ‖g‖² <= S = 100 (B = 10, L = 5 bits, L_s = 7)
    "honest at the bound": [[6, 8, 0, 0], [-10, 0, 0, 0], [0, 0, -6, 8]],
    "party 1 just over": [[6, 8, 0, 0], [-10, 0, 1, 0], [0, 0, -6, 8]],
    "party 2 wraps": [[6, 8, 0, 0], [-10, 0, 0, 0], [1 << 32, 0, 0, 0]],  # (2^32)² ≡ 0 mod 2^64
    "party 1 wraps with non-bits": [[6, 8, 0, 0], [1 << 32, 0, 0, 0], [0, 0, -6, 8]],
    "party 2 flips its check share": [[6, 8, 0, 0], [-10, 0, 0, 0], [0, 0, -6, 8]],  # bit 62 of its first word
}


def wrapped_witness(g: torch.Tensor, bound, non_bits: bool) -> torch.Tensor:
    """A cheater's witness for a coordinate whose square wraps mod 2^64: the slack of the wrapped ‖g‖² (so check
    (c) holds) and, with ``non_bits``, coordinate 0's whole offset g_0 + B in its first "bit" (with non-bits (b)
    would hold too; input as bits, only its low bit is, and (b) refuses it); without, its bits clamped to their
    range (only (b) can)."""
    words = honest_witness(g, bound)
    width = bound.coordinate_bits
    if non_bits:
        words[:width] = 0
        words[0] = int(g[0]) + bound.offset
    wrapped = sum(int(v) ** 2 for v in g.tolist()) % (1 << 64)
    slack = (bound.squared - wrapped) % (1 << 64)
    words[bound.dim * width:] = torch.tensor([(slack >> i) & 1 for i in range(bound.slack_bits)])
    return words


@covers_malicious
def input_bits_job(ctx, n: int):
    """Under ``security = "malicious"``: every party inputs n bits by :func:`mpcdp.mpc.auth_inputs.input_bits`
    (its first value the word 12345, of which only the low bit can be input), and every owner's are opened
    MAC-checked. Returns, per owner, the opened values."""
    from mpcdp.mpc import auth_inputs, authenticated as auth

    bits = torch.tensor([(ctx.rank + i * i) % 3 % 2 for i in range(n)], dtype=torch.int64)
    bits[0] = 12345
    inputs = auth_inputs.input_bits(ctx, bits, label="test bits")
    return [auth.reveal_checked(ctx, x, label=f"test bits {owner}", reason="test output").tolist()
            for owner, x in enumerate(inputs)]


@covers_malicious
def bounded_cases(ctx, cases: list[str]):
    """Under ``security = "malicious"``: for each case of :data:`BOUND_CASES`, every party contributes its vector
    to an authenticated sum whose inputs are checked against ‖g‖² <= 100 (:func:`mpcdp.mpc.bounded.bounded_sum`),
    then opens the sum MAC-checked. A refusal (:class:`~mpcdp.mpc.bounded.OutOfBound`, or the MAC failure of a
    case where party 2 alters its share of the checks' opening) is caught, so the run goes on to the next case.
    Returns, per case, (the opened sum or None, the refusal's line or None, the labels
    opened in that case)."""
    from mpcdp.errors import MacCheckFailed
    from mpcdp.mpc import bounded
    from mpcdp.mpc.authenticated import reveal_checked

    original_open = ctx._open

    def flipping(vector, *, label: str, **kwargs):
        if ctx.rank == 2 and label == "party 2 flips its check share (bound checks)":
            vector = vector.clone()
            vector.view(-1)[0] ^= 1 << 62
        return original_open(vector, label=label, **kwargs)

    ctx._open = flipping

    bound = bounded.UnitBound(100, 4)
    out = []
    for case in cases:
        vectors = BOUND_CASES[case]
        rogue = case.startswith(f"party {ctx.rank} wraps")
        bounded.witness = (lambda g, b: wrapped_witness(g, b, "non-bits" in case)) if rogue else honest_witness
        before = len(ctx.openings)
        opened, refusal = None, None
        try:
            total = bounded.bounded_sum(ctx, torch.tensor(vectors[ctx.rank], dtype=torch.int64), bound,
                                        precision=0, label=case)
            opened = reveal_checked(ctx, total, label=case, reason="test output").tolist()
        except (bounded.OutOfBound, MacCheckFailed) as refused:
            refusal = str(refused)
        out.append((opened, refusal, [o.label for o in ctx.openings[before:] if o.kind != "public"]))
    bounded.witness = honest_witness
    from mpcdp.jobs.aggregate import reveal_aggregate
    from mpcdp.mpc.release import noisy_release

    at_norm = torch.roll(torch.tensor([0.75, -1.0, 0.0, 0.0], dtype=torch.float64), ctx.rank)  # ‖x‖ = 1.25
    summed = reveal_aggregate(ctx, at_norm, input_bound=1.25).tolist()
    released = noisy_release(ctx, at_norm.reshape(2, 2), None, shape=(2, 2), label="release", bound=1.25).tolist()
    return out, summed, released


@covers_malicious
def tampered_noise(ctx, rogue: int, label: str, to: int, samples: int, log_dir: str):
    """``mpcdp noise --mode dgauss`` under ``security = "malicious"`` (σ = 1, one chunk), with party ``rogue``
    flipping bit 62 of the first word of every payload it sends to party ``to`` in a message tagged ``label``
    (tests/rogue_party.py's wrapper: a well-formed frame, only the value is wrong; ``rogue`` = −1: nobody
    deviates). Each party writes ``released-<rank>`` once the noise job has returned (validation values
    opened and MAC-checked)."""
    from mpcdp.jobs.noise import noise_party
    from rogue_party import wrap_sends

    if ctx.rank == rogue:
        wrap_sends(label, to)
    result = noise_party(ctx, samples, "dgauss", 1.0, None, samples)
    with open(os.path.join(log_dir, f"released-{ctx.rank}"), "w") as log:
        log.write("released")
    released, noise = _authenticated_noisy_release(ctx)
    return {key: result[key] for key in ("candidates", "accepted")} | {
        "values": None if result["values"] is None else result["values"].tolist(),
        "released": released.tolist(), "noise": noise.tolist()}


def _authenticated_noisy_release(ctx):
    """A release of Σ_j (rank + 1)·(0.25, −0.5, 1) with 3 authenticated noise values (σ = 16 grid units at
    precision 4), and those noise values opened (MAC-checked) for the test to compare."""
    from mpcdp.mpc import authenticated
    from mpcdp.mpc.release import noisy_release
    from mpcdp.noise import discrete_gaussian as dg
    from mpcdp.noise.auth_gaussian import sample_authenticated

    drawn = sample_authenticated(ctx, 3, dg.plan_for(16.0))
    noise = authenticated.AuthShared(drawn.value, drawn.mac, 4)
    local = (ctx.rank + 1) * torch.tensor([0.25, -0.5, 1.0], dtype=torch.float64)
    released = noisy_release(ctx, local, noise, shape=(3,), label="v_p[0]")
    return released, authenticated.reveal_checked(ctx, noise, label="noise (test only)", reason="test")


def crafted_bernoulli(ctx, words: torch.Tensor, entries: torch.Tensor, lows: torch.Tensor):
    """:func:`mpcdp.mpc.bernoulli.bernoulli_bits` on chosen uniform words (test only: under
    :func:`~mpcdp.mpc.bernoulli.planted_member_words`, so W is the coin, here ``words``), one block per factor of
    the sampler (the first group, the other groups, then the low bits' factor), each block's right operand the
    table entry ``entries`` picks (a one-hot party 0 holds) or, for the low bits' factor, party 0's ``lows``;
    its dead chunks (below :attr:`~mpcdp.mpc.chunk_forms.ChunkForms.first_chunk`) as coin_uniform reads them.
    Returns the opened bits."""
    from mpcdp.mpc import bernoulli, binary
    from mpcdp.noise import discrete_gaussian as dg
    from mpcdp.noise import gaussian_factors as gf

    groups = (gf.FIRST_GROUP, *gf.OTHER_GROUPS)
    forms = [*gf.factor_forms((gf.FIRST_GROUP,), low=False), *gf.factor_forms(gf.OTHER_GROUPS, low=True)]
    per = words.numel() // len(forms)
    mine = ctx.rank == 0
    rights = []
    for b, form in enumerate(forms):
        rows = slice(b * per, (b + 1) * per)
        if b < len(groups):
            hots = (1 << entries[rows]) if mine else torch.zeros(per, dtype=torch.int64)
            rights.append(binary.select(ctx, hots, form.right, 64))
        else:
            rights.append(binary.select(ctx, lows[rows] if mine else torch.zeros(per, dtype=torch.int64), form.right,
                                        64))
    with bernoulli.planted_member_words():
        _, tops = bernoulli.coin_tops(ctx, words, dg.WORD, [form.first_chunk for form in forms])
        bits = bernoulli.bernoulli_bits(ctx, tops, forms, torch.cat(rights), dg.WORD, label="test-bern")
    return ctx.open_masked([bits & 1], label="test-output", xor=True)[0]


def coin_tops_both_ways(ctx, words: torch.Tensor, first_chunks: list[int]):
    """:func:`mpcdp.mpc.bernoulli.coin_tops` on the coin ``words``: (this party's shares of coin_uniform's W
    and of the tops of its one-hots, then of coin_tops' W and tops, all under the planted member words, R = 0,
    so deterministic; then, with dealt R, coin_tops' W and tops opened (XOR))."""
    from mpcdp.mpc import bernoulli

    with bernoulli.planted_member_words():
        uniform, hots = bernoulli.coin_uniform(ctx, words, 62, first_chunks)
        planted = [uniform, *bernoulli._tops(ctx, hots), *(lambda u, t: (u, *t))(
            *bernoulli.coin_tops(ctx, words, 62, first_chunks))]
    uniform, (t1, zero) = bernoulli.coin_tops(ctx, words, 62, first_chunks)
    return planted, ctx.open_masked([uniform, t1, zero], label="test-tops", xor=True)
