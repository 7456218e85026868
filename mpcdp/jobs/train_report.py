"""The JSON report of a training run (:func:`mpcdp.jobs.train.run_plan`): the certificate and its pieces, the
model's metrics on the test rows under every output rule, the optimality gap against the non-private optimum,
and what the run's backend adds (``extra``).

Security model: everything here is computed from what a run releases (the model, the certificate) and from
the public test rows; nothing private enters a report.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

import torch

from mpcdp.data.registry import load
from mpcdp.learning import models
from mpcdp.learning.backends import NoiseLevels
from mpcdp.learning.dpsrm import OUTPUT_RULES


def unit_rows(x: torch.Tensor) -> torch.Tensor:
    """Feature rows scaled to unit L2 norm (a protocol's ``normalize_rows``)."""
    return x / x.norm(dim=1, keepdim=True).clamp(min=1e-12)


@functools.lru_cache(maxsize=8)
def training_optimum(dataset: str, normalize_rows: bool, model_name: str) -> float | None:
    """F(θ*) on the whole training set, the optimality gap's reference (None for a model without one; cached
    for sweeps)."""
    model = models.lookup(model_name)
    data = load(dataset)
    x, y = torch.from_numpy(data.x_train).double(), model.labels(data.y_train)
    if normalize_rows:
        x = unit_rows(x)
    theta = model.optimum(x, y)
    return None if theta is None else model.loss(theta, x, y).item()



def uncertified(report: dict[str, Any], reason: str | None) -> dict[str, Any]:
    """``report`` with its certificate moved out of the certified fields when it does not cover what the run
    releases: ``epsilon`` and ``delta_certified`` None, the numbers as ``epsilon_idealised_noise`` /
    ``delta_idealised_noise``, and the reason."""
    if reason is None:
        return report
    return {**report, "epsilon": None, "delta_certified": None, "epsilon_not_certified_because": reason,
            "epsilon_idealised_noise": report["epsilon"], "delta_idealised_noise": report["delta_certified"],
            "accounting": f"not certified ({reason}); for idealised noise: {report['accounting']}"}


def beyond_target(report: dict[str, Any], target_delta: float) -> dict[str, Any]:
    """``report`` saying plainly that no meaningful guarantee is certified when its certified δ exceeds the
    target (a ``reproducible`` secure run: public batches, no amplification by subsampling, and the sampler's
    truncation term e^ε·D·tail then dominates): ``epsilon`` and ``delta_certified`` None, the numbers kept
    as ``epsilon_unmet`` / ``delta_unmet``, and the reason."""
    delta = report.get("delta_certified")
    if delta is None or delta <= target_delta:
        return report
    reason = (f"no meaningful guarantee is certified: the certified δ = {delta:.3g} at ε = {report['epsilon']:.4g} "
              f"exceeds the target δ = {target_delta:g}"
              + (" (public batches: no amplification by subsampling; the sampler's truncation term e^ε·D·tail "
                 f"= {report['delta_truncation']:.3g} dominates)" if "delta_truncation" in report else ""))
    return {**report, "epsilon": None, "delta_certified": None, "epsilon_not_certified_because": reason,
            "epsilon_unmet": report["epsilon"], "delta_unmet": delta,
            "accounting": f"not certified ({reason}); {report['accounting']}"}


def privacy_pieces(certificate) -> dict[str, Any]:
    """The certificate's terms (mechanism and accountant versions, ε and δ pieces, the grid of each release
    kind), for a report; empty for a certificate without a grid."""
    pieces = getattr(certificate, "pieces", None) or {}
    return {key: pieces[key] for key in ("mechanism", "accountant", "accountant_core", "epsilon_accountant",
                                         "epsilon_rdp", "epsilon_residual",
                                         "delta_gaussian", "delta_truncation", "delta_residual",
                                         "noise_coordinates", "colluders") if key in pieces} | (
        {"release_grid": pieces["releases"]} if "releases" in pieces else {})


def plan_report(plan, data, result, x, y, x_test, y_test, *, certificate, levels: NoiseLevels | None,
            steps: int, passes: float, curve: bool, extra: dict[str, Any]) -> dict[str, Any]:
    model = plan.trained_model
    theta = result.output(plan.output)
    by_rule = {rule: result.output(rule) for rule in OUTPUT_RULES}
    reference = training_optimum(plan.dataset, plan.normalize_rows, plan.model)
    gap = None if reference is None else model.loss(theta, x, y).item() - reference
    grad_norm = None if reference is None else _gradient_norm(model, theta, x, y)
    return {
        "protocol": plan.name, "algorithm": plan.record.display_name(plan.parties), "backend": plan.backend,
        "dataset": data.name, "model": plan.model, "parties": plan.parties,
        "epsilon": None if certificate is None else certificate.epsilon,  # storm: not private
        "epsilon_target": None if certificate is None else plan.epsilon, "delta": plan.delta,
        "delta_certified": None if certificate is None else certificate.delta,
        "accounting": None if certificate is None else certificate.method,
        **privacy_pieces(certificate),
        "sigma0": None if levels is None else levels.sigma0, "sigma": None if levels is None else levels.sigma,
        "iterations": steps, "data_passes": passes, "output": plan.output,
        "model_sha256": hashlib.sha256(theta.detach().to(torch.float64).contiguous().numpy().tobytes()).hexdigest(),
        "test_loss": model.loss(theta, x_test, y_test).item(), "test_error": model.error_rate(theta, x_test, y_test),
        **{f"test_loss_{rule}": model.loss(t, x_test, y_test).item() for rule, t in by_rule.items()},
        **{f"test_error_{rule}": model.error_rate(t, x_test, y_test) for rule, t in by_rule.items()},
        "train_loss": model.loss(theta, x, y).item(),
        "optimal_gap": gap,
        "grad_norm": grad_norm,
        **extra,
        "test_error_curve": [model.error_rate(t, x_test, y_test) for t in result.iterates] if curve else None,
    }


def _gradient_norm(model, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> float:
    """‖∇L(θ)‖ of the training loss, by plain autograd: torch.func's transforms import torch._dynamo on first
    use (about 1.4 s in the launcher, which otherwise never needs it)."""
    point = theta.detach().clone().requires_grad_(True)
    (gradient,) = torch.autograd.grad(model.loss(point, x, y), point)
    return float(gradient.norm())
