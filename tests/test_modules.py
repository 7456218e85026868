"""Any nn.Module as an mpcdp model: per-example gradients by vmap(grad) over functional_call, the paper's CNNs
through the same path, and the layers that per-example clipping cannot describe refused."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from mpcdp.errors import ConfigError
from mpcdp.learning.cnn import CnnSpec
from mpcdp.learning.modules import from_module
from mpcdp.learning.paper_networks import MNIST_CNN


def _functional_mnist(p, x):
    """Paper 002 Table 5 written out with torch.nn.functional (the network's definition before modules)."""
    h = F.max_pool2d(torch.tanh(F.conv2d(x, p["conv1.weight"], p["conv1.bias"], stride=2, padding=3)), 2, 1)
    h = F.max_pool2d(torch.tanh(F.conv2d(h, p["conv2.weight"], p["conv2.bias"], stride=2)), 2, 1)
    h = torch.tanh(F.linear(h.flatten(1), p["fc1.weight"], p["fc1.bias"]))
    return F.linear(h, p["fc2.weight"], p["fc2.bias"])


def test_the_mnist_cnn_as_a_module_gives_the_functional_networks_gradients_bit_for_bit():
    functional = CnnSpec("mnist-cnn", MNIST_CNN.layers, (1, 28, 28), _functional_mnist)
    assert functional.init(5).equal(MNIST_CNN.init(5))  # the same seeded θ⁰ as the recorded runs
    g = torch.Generator().manual_seed(1)
    x, y = torch.rand(16, 1, 28, 28, generator=g, dtype=torch.float64), torch.randint(0, 10, (16,), generator=g)
    theta = MNIST_CNN.init(2)
    assert torch.equal(MNIST_CNN.per_example_gradients(theta, x, y), functional.per_example_gradients(theta, x, y))
    assert MNIST_CNN.loss(theta, x, y).item() == functional.loss(theta, x, y).item()


class _UserMlp(nn.Module):  # a model mpcdp has never seen
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(6, 8)
        self.norm = nn.LayerNorm(8)
        self.out = nn.Linear(8, 3)
        self.frozen = nn.Parameter(torch.ones(3), requires_grad=False)

    def forward(self, x):
        return self.out(torch.relu(self.norm(self.hidden(x)))) * self.frozen


def test_a_users_module_trains_from_its_own_parameters_with_exact_per_example_gradients():
    torch.manual_seed(0)
    module = _UserMlp()
    spec = from_module(module, (6,), loss=F.cross_entropy)
    assert [name for name, _ in spec.layers] == ["hidden.weight", "hidden.bias", "norm.weight", "norm.bias",
                                                 "out.weight", "out.bias"]  # the frozen parameter is not trained
    theta = spec.initial_theta(spec.dim, seed=123)  # the module's own parameters, whatever the seed
    assert torch.equal(theta, torch.cat([p.detach().reshape(-1).double() for p in module.parameters()
                                         if p.requires_grad]))
    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(7, 6, generator=g, dtype=torch.float64), torch.randint(0, 3, (7,), generator=g)
    batched = spec.per_example_gradients(theta, x, y)
    for i in range(7):  # one autograd pass per example on the module itself
        module.zero_grad()
        F.cross_entropy(module(x[i:i + 1].float()), y[i:i + 1]).backward()
        expected = torch.cat([p.grad.reshape(-1) for p in module.parameters() if p.requires_grad]).double()
        assert torch.allclose(batched[i], expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layer, text", [
    (nn.BatchNorm1d(8), "BatchNorm1d.*statistics of the whole batch"),
    (nn.InstanceNorm1d(8, track_running_stats=True), "running statistics"),
])
def test_layers_that_mix_examples_or_keep_data_statistics_are_refused_with_the_reason(layer, text):
    module = nn.Sequential(nn.Linear(6, 8), layer, nn.Linear(8, 2))
    with pytest.raises(ConfigError, match=f"layer '1' .*{text}"):
        from_module(module, (6,))


def test_a_module_without_trainable_parameters_or_not_a_module_is_refused():
    frozen = nn.Linear(3, 2).requires_grad_(False)
    with pytest.raises(ConfigError, match="no trainable parameters"):
        from_module(frozen, (3,))
    with pytest.raises(ConfigError, match="must be a torch.nn.Module. Found function"):
        from_module(lambda x: x, (3,))
