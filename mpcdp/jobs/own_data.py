"""Training on data each party brings itself: every party reads only its own file, on its own host.

One party's run (:func:`own_data_party`, the same on every party):

1. before it joins the run (:func:`check_own_data`, run by :mod:`mpcdp.runtime.party` ahead of the
   rendezvous): read this party's training file (and its held-out file, if any, which must have the training
   file's schema) — :mod:`mpcdp.data.party_file`; build the model for that record shape and run its forward
   pass on one record of zeros; check that every label is one of the model's classes (:func:`model_classes`).
   A refusal here stops the run on every process, the dealer's included, with one line naming this party,
   the file and the reason's category (:mod:`mpcdp.refusals`), before any link opens;
2. agree in public on schema, record shape and the class count, and learn every party's record count n_j
   (:func:`mpcdp.mpc.data_agreement.agree_on_data`; a mismatch is refused on every party, naming the first
   column that differs), before any noise is calibrated or sampled;
3. calibrate and certify the noise for those n_j — every party computes the same certificate from the
   same public inputs, and the parties check that they did (one public exchange of the noise levels);
4. train as the protocol says (:func:`mpcdp.learning.backends.mpc_party`: clipped local gradients, secure
   aggregation, noise sampled inside the MPC, only the noisy aggregate released);
5. evaluate the released model on this party's held-out file, and open only the parties' count-weighted
   mean of those metrics (a secure sum of n·loss, n·error and n: each party's own metrics and test count
   stay with it).

With ``eval_every`` = k (:attr:`~mpcdp.jobs.train.TrainPlan.eval_every`, in the handshake), step 5 also
evaluates every k-th released iterate and opens the parties' mean per point in one more secure sum
(:mod:`mpcdp.jobs.own_data_results`, which also names the most exposed party). The dry run of the same
protocol, noise simulated in plaintext, is :mod:`mpcdp.jobs.own_data_simulated`.

Labels: a model has a fixed number of classes. Logistic regression takes −1 and +1. A network takes the
class indices 0..C−1, where C is the ``classes`` the user declares (:func:`mpcdp.train`), or else the
width of the network's output for one record (a single output counts as 2 classes, 0 and 1: one logit of
a binary classifier). Each party checks its own training and held-out labels against those classes before
anything leaves it. A label that is not one is refused on that party alone, naming the column and the
class count but no label value and no count of records. The parties then agree on C only, so every
party's label i means class i. Which classes a party holds is never disclosed: a party may lack some.

Security model: as every secure run (semi-honest parties, a dealer that colludes with no party). Disclosed
beyond the released models: each party's schema (feature names and dtypes) and its hash, record shape and
record count, the model's class count, and the weighted mean test metrics (with ``eval_every``, at every
evaluated iterate); a party that refuses its input discloses the reason's category, its file's name and the
column (never a value).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any, Sequence

import numpy as np
import torch

from mpcdp.mpc.data_agreement import agree_on_data
from mpcdp.data.party_file import PartyData, check_labels, load_party_file, schema_difference
from mpcdp.errors import ConfigError, ConfigMismatchError, PartyFailed, PartyRefused
from mpcdp.jobs.estimate import estimate_own_data
from mpcdp.jobs.keeping import Keeping
from mpcdp.jobs.own_data_results import most_exposed_party, secure_curve
from mpcdp.jobs.secure_run import Job, secure_run, secure_run_here
from mpcdp.jobs.train import plan_noise, unit_rows
from mpcdp.runtime.party import checks_before_joining
from mpcdp.refusals import parse_refusal, refusing
from mpcdp.learning.backends import NoiseLevels, mpc_party
from mpcdp.learning.dpsrm import Shard


@dataclasses.dataclass(frozen=True)
class PartySource:
    """One party's records and how to read them: files (:func:`~mpcdp.data.party_file.load_party_file`),
    or records already in this process (:class:`~mpcdp.data.party_file.PartyData`, e.g. from a Dataset)."""

    train: str | PartyData
    test: str | PartyData | None = None
    label: str | None = None
    features: tuple[str, ...] | int | None = None

    def _read(self, source):
        if source is None or isinstance(source, PartyData):
            return source
        features = list(self.features) if isinstance(self.features, tuple) else self.features
        return load_party_file(source, label=self.label, features=features)

    def load(self) -> tuple[PartyData, PartyData | None]:
        """The training and held-out records.

        Raises:
            ConfigError: the held-out file has another schema than the training file (naming the first column
                that differs); or what :func:`~mpcdp.data.party_file.load_party_file` raises.
        """
        train, test = self._read(self.train), self._read(self.test)
        if test is not None and test.schema_sha256 != train.schema_sha256:
            difference = schema_difference(train.names, train.dtypes, test.names, test.dtypes,
                                           this="the training file", other="the held-out file")
            if difference is None:  # the same columns, records of another shape
                shape = tuple(test.x.shape[1:])
                raise refusing(ConfigError(f"held-out file {test.source!r} has records of shape {shape}, training "
                                           f"file {train.source!r} of {tuple(train.x.shape[1:])}."), "shape",
                               test.source, str(shape))
            position, column, where = difference
            raise refusing(ConfigError(f"held-out file {test.source!r} has another schema than training file "
                                       f"{train.source!r}: {where}."), "schema", test.source, column, position)
        return train, test


@dataclasses.dataclass(frozen=True)
class Classes:
    """The labels a model takes: ``count`` classes, the class indices 0..count−1 unless ``values`` lists the
    labels in class order; ``described``: how errors name them."""

    count: int
    described: str
    values: tuple[int, ...] | None = None

    def check(self, data: PartyData, column: str | None) -> None:
        """Refuse ``data`` locally if a label is not one of these classes (no label value shown)."""
        check_labels(data, self.count, self.described, values=self.values, column=column)


def model_classes(model, declared: int | None = None) -> Classes:
    """The classes ``model`` takes (see the module docstring): −1/+1 for logistic regression, else the class
    indices 0..C−1 with C = ``declared``, or the model's own ``classes``, or its output width.

    Raises:
        ConfigError: ``declared`` is not an integer >= 2 (or not 2 for logistic regression), or the network
            cannot take one record of its input shape, or its output for one record is not a vector of scores.
    """
    _check_declared(declared)
    if model.kind == "logreg":
        if declared not in (None, 2):
            raise ConfigError(f"`classes` for logistic regression is 2 (labels -1 and +1). Found {declared!r}.")
        return Classes(2, "the 2 classes of logistic regression, -1 and +1", (-1, 1))
    count = declared or getattr(model, "classes", None) or max(2, _output_width(model))
    return Classes(count, f"the model's {count} classes, the class indices 0..{count - 1}")


def _check_declared(declared) -> None:
    if declared is not None:
        from mpcdp.validation import check_integer

        check_integer(declared, "classes", minimum=2)


def _output_width(model) -> int:
    """The width of a network's output for one record of zeros (one forward pass; no data involved)."""
    try:
        with torch.no_grad():
            out = model.logits(model.init(0), torch.zeros((1, *model.input_shape), dtype=torch.float64))
    except Exception as exc:  # noqa: BLE001 - the user's forward: report what it said about shapes
        raise ConfigError(f"`model` {model.name!r} cannot take this party's records of shape {model.input_shape}: "
                          f"{type(exc).__name__}: {str(exc)[:300]}") from None
    if out.ndim != 2:
        raise ConfigError(f"`model` {model.name!r} gives an output of shape {tuple(out.shape[1:])} for one record; "
                          f"its class count cannot be read from it: declare `classes`")
    return int(out.shape[1])


@dataclasses.dataclass(frozen=True)
class CheckedData:
    """A party's records and model once its local checks passed (:func:`local_checks`)."""

    train: PartyData
    test: PartyData | None
    model: Any
    classes: Classes

    def description(self) -> dict[str, Any]:
        """What the parties agree on in public (:func:`~mpcdp.mpc.data_agreement.agree_on_data`)."""
        return {**self.train.description(), "classes": self.classes.count}


def local_checks(source: PartySource | CheckedData, model) -> CheckedData:
    """Everything this party checks alone, before it joins the run (see the module docstring): its files, the
    held-out file's schema, the model's forward pass on one record of its record shape, its labels.

    Raises:
        ConfigError, InputError: a refusal, carrying the :class:`~mpcdp.refusals.Refusal` the
            others are told (the category, the file, the column).
    """
    if isinstance(source, CheckedData):
        return source
    train, test = source.load()
    declared = model.classes if isinstance(model, ModuleRecipe) else None
    if isinstance(model, ModuleRecipe):
        model = model.build(tuple(train.x.shape[1:]))
    _check_forward(model, train)
    classes = model_classes(model, declared)
    _check_training_step(model, classes, train)
    for data in (train, test) if test is not None else (train,):
        classes.check(data, source.label)
    return CheckedData(train, test, model, classes)


def _check_forward(model, data: PartyData) -> None:
    """The model takes this party's records: their shape (``check_inputs``) and, for a network, one forward
    pass on a record of zeros of that shape (no data involved).

    Raises:
        ConfigError: it does not, carrying a ``model-input`` refusal (the file and the record shape).
    """
    shape = tuple(data.x.shape[1:])
    try:
        model.check_inputs(shape, data.source)
        if model.kind != "logreg":
            with torch.no_grad():
                model.logits(model.init(0), torch.zeros((1, *shape), dtype=torch.float64))
    except Exception as exc:  # noqa: BLE001 - the user's forward: report what it said about shapes
        raise refusing(ConfigError(f"`model` {model.name!r} cannot take the records of {data.source!r}, of shape "
                                   f"{shape}: {type(exc).__name__}: {str(exc)[:300]}"), "model-input",
                       data.source, str(shape)) from None


def _check_training_step(model, classes: Classes, data: PartyData) -> None:
    """The model trains on this party's record shape with the agreed classes: a forward pass, the user's loss
    and one backward pass (per-example gradients) on a record of zeros labelled with the first and with the
    last class, so that a network whose output cannot score every class (a 1-wide output under a loss that
    indexes classes) is refused here, before the parties connect and any noise is drawn. No data involved.

    Raises:
        ConfigError: it does not, naming the model and the class count, carrying a ``model-input`` refusal.
    """
    if model.kind == "logreg":
        return
    shape = tuple(data.x.shape[1:])
    x = torch.zeros((2, *shape), dtype=torch.float64)
    first, last = (classes.values[0], classes.values[-1]) if classes.values else (0, classes.count - 1)
    try:
        y = model.labels(np.array([first, last]))
        gradients = model.per_example_gradients(model.initial_theta(model.dimension(x), 0), x, y)
        if not bool(torch.isfinite(torch.as_tensor(gradients)).all()):
            raise ValueError("its per-example gradients are not finite on a record of zeros")
    except Exception as exc:  # noqa: BLE001 - the user's module and loss: report what they said
        width = _output_width(model)
        raise refusing(ConfigError(
            f"`model` {model.name!r} cannot train with {classes.count} classes (output width {width}) on records "
            f"of shape {shape}: forward, loss and backward on a record of zeros labelled {first} and {last} "
            f"failed: {type(exc).__name__}: {str(exc)[:300]}"),
            "model-classes", data.source, f"{classes.count} classes, output width {width}") from None


def _checkpointable() -> list[str]:
    from mpcdp.learning import algorithms

    return sorted(name for name, record in algorithms.ALGORITHMS.items() if record.checkpointable)


def check_own_data(plan, source: PartySource | CheckedData, model, noise: bool = True,
                   keeping: Keeping | None = None) -> tuple:
    """:func:`own_data_party`'s arguments once its local checks passed (:func:`local_checks`) and, for a run
    with noise, its records have no budget spent by an earlier run (:func:`mpcdp.jobs.budget.check_budget`);
    the runtime calls it before the party joins the run (:func:`~mpcdp.runtime.party.checks_before_joining`)."""
    from mpcdp.jobs import budget

    checked = local_checks(source, model)
    keeping = keeping or Keeping()
    if keeping.checkpoint_dir and not plan.record.checkpointable:
        raise ConfigError(f"`checkpoint` keeps a run of a checkpointable algorithm ({', '.join(_checkpointable())}); "
                          f"{plan.record.name!r} is not one.")
    if noise and not isinstance(source, CheckedData):
        resuming = budget.run_key(keeping.checkpoint_dir) if keeping.resume else None
        budget.check_budget(budget.data_digest(checked.train.x, checked.train.y), file=checked.train.source,
                            fresh_budget=keeping.fresh_budget, resuming=resuming)
    return plan, checked, model, noise, keeping


def _held_out(ctx, model, theta: torch.Tensor, test: PartyData | None, normalize_rows: bool) -> dict[str, Any]:
    """This party's metrics on its held-out file, and the parties' count-weighted means (one secure sum,
    one opening of three numbers)."""
    from mpcdp.mpc.secure_sum import secure_sum

    if test is None:
        own, local = None, torch.zeros(3, dtype=torch.float64)
    else:
        x, y = torch.tensor(test.x, dtype=torch.float64), model.labels(test.y)
        if normalize_rows:
            x = unit_rows(x)
        loss, error = float(model.loss(theta, x, y)), float(model.error_rate(theta, x, y))
        own = {"test_loss": loss, "test_error": error, "test_records": len(y)}
        local = torch.tensor([len(y) * loss, len(y) * error, float(len(y))], dtype=torch.float64)
    total = ctx.reveal(secure_sum(ctx, local, field="held-out metrics"), label="held-out metrics",
                       reason="count-weighted mean of the parties' test metrics")
    count = float(total[2])
    mean = None if count < 0.5 else {"test_loss": float(total[0]) / count, "test_error": float(total[1]) / count}
    return {"own": own, "mean": mean}


def check_noise_agreement(everyone: Sequence[dict[str, Any]]) -> None:
    """Every party's calibrated noise (ε, σ₀, σ, steps), in rank order, must be party 0's.

    Raises:
        ConfigMismatchError: naming the first party whose calibration differs, and both values.
    """
    for j, other in enumerate(everyone):
        if other != everyone[0]:
            raise ConfigMismatchError(f"party {j} calibrated other noise than party 0 ({other} against "
                                      f"{everyone[0]}): the parties run different mpcdp or dp-accounting "
                                      f"versions", party=j)


@dataclasses.dataclass(frozen=True)
class ModuleRecipe:
    """A user's ``nn.Module`` and loss, made into an mpcdp model by each party once it knows its record shape
    (:func:`~mpcdp.learning.modules.from_module`)."""

    module: Any
    loss: Any = None
    classes: int | None = None  # the class count; None: the module's output width (:func:`model_classes`)

    def __post_init__(self):
        _check_declared(self.classes)

    def build(self, record_shape: tuple[int, ...]):
        from mpcdp.learning.modules import from_module

        kwargs = {} if self.loss is None else {"loss": self.loss}
        return from_module(self.module, record_shape, **kwargs)


@checks_before_joining(check_own_data)
def own_data_party(ctx, plan, source: PartySource | CheckedData, model, noise: bool = True,
                   keeping: Keeping | None = None) -> dict[str, Any]:
    """One party of a run on its own data (see the module docstring). ``plan``: the protocol
    (:class:`~mpcdp.jobs.train.TrainPlan`; its dataset is not read); ``source``: this party's files, or its
    records once checked (:func:`check_own_data`, which the runtime runs first); ``model``: an mpcdp model
    object (:mod:`mpcdp.learning.models`, or :func:`~mpcdp.learning.modules.from_module` of an ``nn.Module``);
    ``noise`` False: the same run without noise (for comparisons; nothing is certified); ``keeping``: its
    checkpoints and its privacy ledger entry (:class:`Keeping`, :mod:`mpcdp.jobs.budget`)."""
    started = time.perf_counter()
    checked = local_checks(source, model)
    train, test, model = checked.train, checked.test, checked.model
    sizes = agree_on_data(ctx, checked.description())
    x, y = torch.tensor(train.x, dtype=torch.float64), model.labels(train.y)
    if plan.normalize_rows:
        x = unit_rows(x)
    dim = model.dimension(x)
    planned = plan_noise(plan, tuple(sizes), dim)
    levels = planned.levels if noise else NoiseLevels.none()
    certificate = planned.certificate if noise else None
    agreed = {"epsilon": None if certificate is None else certificate.epsilon,
              "sigma0": levels.sigma0, "sigma": levels.sigma, "steps": planned.steps}
    check_noise_agreement(ctx.exchange_public(agreed, label="noise agreement"))
    estimate = estimate_own_data(plan, planned, dim, levels)
    runner = functools.partial(plan.record.runner, model=model)
    keeping = keeping or Keeping()
    checkpoint, entry = _kept(plan, planned, levels, tuple(sizes), checked, keeping, certificate)
    prepare_s = time.perf_counter() - started
    out = mpc_party(ctx, Shard(ctx.rank, x, y), planned.params, levels, dim, runner, checkpoint=checkpoint,
                    on_opened=None if entry is None else entry.opened)
    theta = out["result"].output(plan.output)
    evaluate_start = time.perf_counter()
    held_out = _held_out(ctx, model, theta, test, plan.normalize_rows)
    curve = secure_curve(ctx, model, out["result"], test, plan)
    return {"theta": theta, "sizes": sizes, **agreed, "delta": plan.delta if noise else None,
            "certificate": None if certificate is None else dataclasses.asdict(certificate),
            "most_exposed_party": most_exposed_party(planned.params, sizes),
            "held_out": held_out, "curve": curve,
            "releases": len(out["result"].released),
            "online_s": out["online_s"], "presample_s": out["presample_s"], "bytes_sent": out["bytes_sent"],
            "prepare_s": prepare_s, "evaluate_s": time.perf_counter() - evaluate_start,
            "estimate": estimate.to_dict(), "resumed_after_release": out["resumed_after"],
            "re_served_releases": out["re_served"],
            "ledger": None if entry is None else {"file": str(entry.path), "opened": len(entry.entry["opened"]),
                                                  "releases": entry.entry["releases"]}}


def _kept(plan, planned, levels, sizes: tuple[int, ...], checked: CheckedData, keeping: Keeping,
          certificate) -> tuple[dict[str, Any] | None, Any]:
    """The run's checkpoint settings for :func:`~mpcdp.learning.backends.mpc_party` (None without a folder:
    bound to the resolved plan, the agreed noise and the record counts, and by ``mpc_party`` to this party's
    records) and its privacy ledger entry (None for a run without noise), written before the first release."""
    from mpcdp.jobs import budget
    from mpcdp.jobs.train import checkpoint_description

    checkpoint = None
    if keeping.checkpoint_dir:
        checkpoint = {"dir": keeping.checkpoint_dir, "every": keeping.every_of(planned.steps),
                      "resume": keeping.resume,
                      "description": {**checkpoint_description(plan, levels, planned.steps), "sizes": list(sizes)}}
    if certificate is None:
        return checkpoint, None
    entry = budget.RunEntry(budget.data_digest(checked.train.x, checked.train.y),
                            budget.run_key(keeping.checkpoint_dir), protocol=plan.name,
                            epsilon=certificate.epsilon, delta=certificate.delta, releases=planned.steps + 1,
                            file=checked.train.source)
    return checkpoint, entry


def run_own_data(plan, sources: Sequence[PartySource], model, *, noise: bool = True,
                 keeping: Keeping | None = None) -> list[dict[str, Any]]:
    """Every party of ``plan`` on this host, party j reading only ``sources[j]`` in its own process (its
    checkpoints, if any, under ``keeping.checkpoint_dir``/party-j)."""
    if len(sources) != plan.parties:
        raise ConfigError(f"`sources` must give one file per party ({plan.parties}). Found {len(sources)}.")
    run = secure_run(plan, own_data_party, [(plan, s, model, noise, keeping) for s in sources],
                     job=_job(plan, noise))
    for value in run.values:  # the run's own measures, beside each party's
        value.update(wall_s=run.wall_s, dealer_bytes=(run.dealer or {}).get("bytes_sent"),
                     party_bytes=[v["bytes_sent"] for v in run.values])
    return run.values


def as_refusal(failure: PartyFailed) -> PartyFailed:
    """A failed local run (:func:`run_own_data`) as the caller should see it: where a party refused its own
    input, :class:`~mpcdp.errors.PartyRefused` with that party's one line (the process reports stay on it);
    else ``failure`` itself."""
    for process in failure.reports:
        if process.error_type == "PartyRefused" and process.role == "party" and process.blamed_party == process.rank:
            refusal = parse_refusal(process.refusal) if process.refusal is not None else None
            return PartyRefused(process.message, party=process.rank, refusal=refusal, reports=failure.reports)
    return failure


def report(values: dict[str, Any]) -> dict[str, Any]:
    """One party's result as plain JSON (the model as a list, the certificate's numbers)."""
    certificate = values["certificate"] or {}
    return {"theta": values["theta"].tolist(), "parties_records": values["sizes"], "epsilon": values["epsilon"],
            "delta": values["delta"], "delta_certified": certificate.get("delta"),
            "accounting": certificate.get("method"), "releases": values["releases"],
            "held_out": values["held_out"], "online_s": values["online_s"], "presample_s": values["presample_s"],
            "bytes_sent": values["bytes_sent"], "most_exposed_party": values.get("most_exposed_party"),
            "resumed_after_release": values.get("resumed_after_release"),
            "re_served_releases": values.get("re_served_releases", []), "ledger": values.get("ledger"),
            **({"metrics": values["curve"]} if values.get("curve") else {}),
            **{key: values[key] for key in ("prepare_s", "evaluate_s", "estimate", "wall_s", "dealer_bytes",
                                             "party_bytes") if key in values}}


def run_own_data_here(plan, source: PartySource, model, *, rank: int, rendezvous: str,
                      noise: bool = True, settings=None, keeping: Keeping | None = None) -> dict[str, Any]:
    """This host's party ``rank`` of a run on the parties' own data (the others run the same on theirs, the
    dealer ``mpcdp party`` with rank m); what :func:`own_data_party` returns. ``settings``: the run's
    :class:`~mpcdp.runtime.endpoint.RunSettings` (None: from the environment)."""
    return secure_run_here(plan, own_data_party, (plan, source, model, noise, keeping), job=_job(plan, noise),
                           rank=rank, rendezvous=rendezvous, settings=settings)


def _job(plan, noise: bool) -> Job:
    """What every party's handshake compares (:class:`~mpcdp.jobs.secure_run.Job`): the resolved protocol (a
    party started with another ε, δ, clipping constant or training parameter is refused naming the field,
    before the data agreement). The noise is calibrated after the handshake, from the record counts the data
    agreement makes public; the noise agreement compares it."""
    return Job(f"{plan.name} on the parties' own data", public={"noised": noise})
