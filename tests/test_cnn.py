"""Paper 002's CNNs: layer shapes as Tables 5–6, and per-example gradients (torch.func) equal autograd's."""

import math

import pytest
import torch

from mpcdp.errors import InputError
from mpcdp.learning.cnn import CIFAR_CNN5, MNIST_CNN


def test_layer_shapes_are_the_papers():
    assert [shape for _, shape in MNIST_CNN.layers] == [(16, 1, 8, 8), (16,), (32, 16, 4, 4), (32,), (32, 512),
                                                          (32,), (10, 32), (10,)]
    assert [shape for _, shape in CIFAR_CNN5.layers] == [(6, 3, 5, 5), (6,), (16, 6, 5, 5), (16,), (120, 400),
                                                           (120,), (84, 120), (84,), (10, 84), (10,)]
    assert MNIST_CNN.dim == 26_010 and CIFAR_CNN5.dim == 62_006
    theta = MNIST_CNN.init(3)
    assert torch.equal(MNIST_CNN.flatten(MNIST_CNN.unflatten(theta)), theta)
    # default initialisation: |w| <= 1/sqrt(fan_in) per layer, and not all zero
    params = MNIST_CNN.unflatten(theta)
    assert params["fc1.weight"].abs().max() <= 1 / math.sqrt(512) and params["fc1.bias"].abs().max() > 0


@pytest.mark.parametrize("spec", [MNIST_CNN, CIFAR_CNN5], ids=lambda s: s.name)
def test_per_example_gradients_equal_autograd_per_example(spec):
    g = torch.Generator().manual_seed(0)
    theta = spec.init(1)
    x = torch.randn(5, *spec.input_shape, generator=g, dtype=torch.float64)
    y = torch.randint(0, 10, (5,), generator=g)
    batched = spec.per_example_gradients(theta, x, y)
    for i in range(5):
        t = theta.clone().requires_grad_(True)
        torch.nn.functional.cross_entropy(spec.logits(t, x[i:i + 1]), y[i:i + 1]).backward()
        assert torch.allclose(batched[i], t.grad, rtol=1e-10, atol=1e-12)
    # the batch mean of per-example gradients is the gradient of the mean loss
    t = theta.clone().requires_grad_(True)
    spec.loss(t, x, y).backward()
    assert torch.allclose(batched.mean(0), t.grad, rtol=1e-10, atol=1e-12)


def test_wrong_input_shape_is_named():
    with pytest.raises(InputError, match=r"`x` for mnist-cnn must have shape \(n, 1, 28, 28\)"):
        MNIST_CNN.per_example_gradients(MNIST_CNN.init(), torch.zeros(2, 3, 32, 32, dtype=torch.float64),
                                        torch.zeros(2, dtype=torch.int64))
    with pytest.raises(InputError, match="theta"):
        MNIST_CNN.unflatten(torch.zeros(5))


def test_mnist_subset_loads_and_the_cnn_learns_from_it():
    from mpcdp.data.mnist import MNIST_5K_NAME, load_mnist_5k

    data = load_mnist_5k()
    assert data.name == MNIST_5K_NAME and "5,000" in data.name  # named as the subset it is
    assert data.x_train.shape == (4000, 1, 28, 28) and data.x_test.shape == (1000, 1, 28, 28)
    assert set(data.y_train.tolist()) == set(range(10)) and 0.0 <= data.x_train.min() < data.x_train.max() <= 1.0
    # 20 full-batch gradient steps (averaged per-example gradients, no privacy) on 128 digits lower the loss
    x = torch.from_numpy(data.x_train[:128]).to(torch.float64)
    y = torch.from_numpy(data.y_train[:128])
    theta = MNIST_CNN.init(0)
    before = MNIST_CNN.loss(theta, x, y).item()
    for _ in range(20):
        theta = theta - 0.5 * MNIST_CNN.per_example_gradients(theta, x, y).mean(0)
    after = MNIST_CNN.loss(theta, x, y).item()
    assert before > 2.0 and after < 0.8 * before
