"""Per-example gradients of the paper's model and both clippings."""

import pytest
import torch

from mpcdp.errors import InputError
from mpcdp.learning.clipping import clip_rows, clipped_differences
from mpcdp.learning.logreg import (clipped_gradient_sum, error_rate, example_loss, lbfgs_optimum, loss,
                                   newton_optimum, optimum, per_example_gradients, per_example_gradients_at,
                                   per_example_losses)


def _batch(seed=0, b=16, d=9):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, d, generator=g, dtype=torch.float64)
    y = torch.where(torch.rand(b, generator=g) > 0.5, 1.0, -1.0).to(torch.float64)
    theta = torch.randn(d, generator=g, dtype=torch.float64)
    return theta, x, y


def test_per_example_gradients_equal_autograd_on_single_examples():
    theta, x, y = _batch()
    batch = per_example_gradients(theta, x, y)
    for i in range(len(x)):
        t = theta.clone().requires_grad_(True)
        example_loss(t, x[i], y[i]).backward()
        assert torch.allclose(batch[i], t.grad, atol=1e-12)
    # their mean is the gradient of the mean loss
    t = theta.clone().requires_grad_(True)
    loss(t, x, y).backward()
    assert torch.allclose(batch.mean(0), t.grad, atol=1e-12)


def test_gradients_at_several_points_and_per_example_losses():
    theta, x, y = _batch(seed=1)
    other = theta + 0.3
    both = per_example_gradients_at(torch.stack([theta, other]), x, y)
    assert both.shape == (2, len(x), len(theta))
    for k, point in enumerate((theta, other)):
        for i in range(len(x)):
            t = point.clone().requires_grad_(True)
            example_loss(t, x[i], y[i]).backward()
            assert torch.allclose(both[k, i], t.grad, atol=1e-12)
    losses = per_example_losses(theta, x, y)
    assert torch.allclose(losses, torch.stack([example_loss(theta, x[i], y[i]) for i in range(len(x))]), atol=1e-12)


def test_clipping_bounds_rows_and_keeps_small_ones():
    theta, x, y = _batch(1)
    grads = per_example_gradients(theta, x * 10, y)
    clipped = clip_rows(grads, 0.5)
    assert (clipped.norm(dim=1) <= 0.5 + 1e-12).all()
    small = grads.norm(dim=1) <= 0.5
    assert torch.equal(clipped[small], grads[small])
    # direction preserved
    cos = torch.nn.functional.cosine_similarity(clipped, grads, dim=1)
    assert torch.allclose(cos, torch.ones_like(cos))


def test_difference_clipping_bounds_the_difference_itself():
    theta, x, y = _batch(2)
    now = per_example_gradients(theta, x, y)
    before = per_example_gradients(theta + 0.5, x, y)
    diff = clipped_differences(now, before, 0.01)
    assert (diff.norm(dim=1) <= 0.01 + 1e-12).all()
    # clipping each gradient to C1 and subtracting would bound the difference only by 2·C1
    naive = clip_rows(now, 1.0) - clip_rows(before, 1.0)
    assert naive.norm(dim=1).max() > 0.01


def test_bad_gradients_are_refused():
    with pytest.raises(InputError, match="1 rows with NaN/Inf"):
        clip_rows(torch.tensor([[1.0, float("nan")], [0.0, 1.0]]), 1.0)
    with pytest.raises(InputError, match="differ in shape"):
        clipped_differences(torch.zeros(2, 3), torch.zeros(3, 3), 1.0)


def test_error_rate():
    x = torch.tensor([[1.0], [-1.0], [2.0]])
    assert error_rate(torch.tensor([1.0]), x, torch.tensor([1.0, -1.0, -1.0])) == pytest.approx(1 / 3)


@pytest.mark.parametrize("bound", [0.05, 0.5, 1e6])
def test_closed_form_clipped_sum_equals_clipping_the_per_example_gradients(bound):
    theta, x, y = _batch(seed=3, b=40, d=7)
    theta = theta * 3  # a regulariser gradient that is not negligible
    expected = clip_rows(per_example_gradients(theta, x, y), bound)
    assert torch.allclose(clipped_gradient_sum(theta, x, y, bound), expected.sum(0), atol=1e-12)
    weights = torch.linspace(0.1, 2.0, 40, dtype=torch.float64)
    assert torch.allclose(clipped_gradient_sum(theta, x, y, bound, row_weights=weights),
                          (weights[:, None] * expected).sum(0), atol=1e-12)
    # batched: k models on k datasets at once
    thetas = torch.stack([theta, -theta])
    xs, ys = torch.stack([x, x.flip(0)]), torch.stack([y, y.flip(0)])
    batched = clipped_gradient_sum(thetas, xs, ys, bound)
    for k in range(2):
        assert torch.allclose(batched[k], clip_rows(per_example_gradients(thetas[k], xs[k], ys[k]), bound).sum(0),
                              atol=1e-12)
    with pytest.raises(InputError, match="NaN/Inf"):
        clipped_gradient_sum(theta, x.clone().index_fill_(0, torch.tensor([2]), float("nan")), y, bound)


def test_optimum_is_a_stationary_point_below_every_other_tried_point():
    theta, x, y = _batch(seed=4, b=200, d=5)
    best = optimum(x, y)
    assert torch.func.grad(loss)(best, x, y).norm() < 1e-6
    assert all(loss(best, x, y) <= loss(best + 0.05 * torch.randn(5, dtype=torch.float64), x, y)
               for _ in range(20))


def test_newton_optimum_is_lbfgs_optimum_on_a9a():
    from mpcdp.data.registry import load

    data = load("a9a")
    x, y = torch.from_numpy(data.x_train[:8000]).double(), torch.from_numpy(data.y_train[:8000]).double()
    newton = newton_optimum(x, y)
    assert newton is not None  # F is locally convex on Newton's whole path here: the fast path is taken
    assert torch.equal(optimum(x, y), newton)
    reference = lbfgs_optimum(x, y)
    assert abs(loss(newton, x, y).item() - loss(reference, x, y).item()) < 1e-10
    assert (newton - reference).abs().max() < 1e-3
    assert torch.func.grad(loss)(newton, x, y).norm() < 1e-9


def test_a_path_through_negative_curvature_keeps_the_lbfgs_optimum():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(60, 4, generator=g, dtype=torch.float64)
    y = torch.where(x @ torch.tensor([3.0, -2.0, 1.0, 0.5], dtype=torch.float64) > 0, 1.0, -1.0).double()
    # separable rows: θ grows where the regulariser λθ²/(1 + θ²) curves down, and Newton meets it
    assert newton_optimum(x, y) is None
    assert torch.equal(optimum(x, y), lbfgs_optimum(x, y))
