"""The Deep-Q controller of paper 004 (Jin, He, Dai), Algorithm 3 and §VI: one per node, it decides whether the
node's next mini-batch updates its local model (action 0, "Local") or the public global model (action 1, "Global").

§VI settings, all defaults here: a 3-layer fully connected Q-network, input → 128 → 2, every activation linear,
Xavier-initialised; Adam with learning rate 0.01; replay memory of 20 transitions; Q-learning mini-batch of 10; a
target network copied from the Q-network every ``target_every`` updates; exploration probability annealed linearly
from 1 to 0.1 over ``explore_steps`` decisions (the paper: n/(2Mb), half of one pass).

Not fixed by the paper, chosen here and recorded with every run: the discount γ (0.9), the target-network period C
(5 updates; Algorithm 3 says "every C steps"), and the contents of the state. The paper's state is
s_t = [w_t^L, f(w_t^L, sample_t)] with "d + 2" inputs; the second extra input is taken to be the previous action,
which Algorithm 3 lists among its requirements. For a K-class one-vs-all model w_t^L is the d·K matrix, so the input
has d·K + 2 entries. Reward: Algorithm 3 writes r_{t−1} = −f(w_{t−1}^L, sample_{t−1}), the loss *before* the action,
which does not depend on the action it rewards; Algorithm 2's text uses the loss after the update,
f(w_{t+1}^L, sample_t). The latter is the reward here: r_t = −f(w_{t+1}^L, D_m(t)). The last decision of a node's pass
is terminal (y_j = r_j in eq. (11)).

Security model: the controller is private to its node and trained on that node's losses only. Its *decisions* are
not: whether a node touched the global model at a turn is visible to every node, and it is a function of the node's
private data. Theorem 5 covers the released model values given the sequence of actions, not the action sequence
itself, and no mechanism here bounds what the actions reveal: mpcdp prints no certified ε for Algorithm 2 (its
reports carry ``epsilon_not_certified_because`` and the gradient releases' ε as
``epsilon_gradient_releases_only``, :mod:`mpcdp.jobs.decentralized`).

Declared cost per decision: one forward pass (in·128 + 128·2 multiply-adds), one Adam step on a mini-batch of 10
(≈ 3 forward-backward passes' worth), every C decisions a copy of the network; nothing communicated.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import random

import torch

from mpcdp.errors import ConfigError
from mpcdp.validation import check_integer, check_number

__all__ = ["DeepQSettings", "DeepQController", "LOCAL", "GLOBAL"]

LOCAL, GLOBAL = 0, 1


@dataclasses.dataclass(frozen=True)
class DeepQSettings:
    """Algorithm 3's hyper-parameters (§VI values as defaults; see the module docstring for the unstated ones)."""

    hidden: int = 128
    learning_rate: float = 0.01
    replay_memory: int = 20
    minibatch: int = 10
    discount: float = 0.9
    target_every: int = 5
    explore_start: float = 1.0
    explore_end: float = 0.1

    def __post_init__(self):
        for field in ("hidden", "replay_memory", "minibatch", "target_every"):
            check_integer(getattr(self, field), f"deepq.{field}")
        if self.minibatch > self.replay_memory:
            raise ConfigError(f"`deepq.minibatch` must be <= `deepq.replay_memory` ({self.replay_memory}). "
                              f"Found {self.minibatch}.")
        check_number(self.learning_rate, "deepq.learning_rate", low=0)
        for field in ("discount", "explore_start", "explore_end"):
            check_number(getattr(self, field), f"deepq.{field}", low=0, high=1, low_open=False, high_open=False)
        if self.explore_end > self.explore_start:
            raise ConfigError(f"`deepq.explore_end` must be <= `deepq.explore_start` ({self.explore_start}). "
                              f"Found {self.explore_end}.")


def _q_network(inputs: int, hidden: int, generator: torch.Generator) -> torch.nn.Sequential:
    """Three layers of neurons (§VI): input → hidden → 2 outputs, linear activations, Xavier-uniform weights (as
    TensorFlow's default initialiser), zero biases."""
    layers = (torch.nn.Linear(inputs, hidden), torch.nn.Linear(hidden, 2))
    net = torch.nn.Sequential(*layers).to(torch.float64)  # (Module.to converts the layers in place)
    with torch.no_grad():
        for layer in layers:
            bound = math.sqrt(6.0 / (layer.in_features + layer.out_features))
            layer.weight.uniform_(-bound, bound, generator=generator)
            layer.bias.zero_()
    return net


class DeepQController:
    """Algorithm 3 for one node: ε-greedy action from Q(s, ·; θ), experience replay, a periodically copied target.

    Use: ``a = choose(s)`` → take the action → ``learn(s, a, r, s_next, terminal)``.
    """

    def __init__(self, state_size: int, *, explore_steps: int, settings: DeepQSettings = DeepQSettings(),
                 seed: int | None = None):
        check_integer(state_size, "state_size")
        check_integer(explore_steps, "explore_steps")
        self.settings = settings
        self.explore_steps = explore_steps
        generator = torch.Generator().manual_seed(random.Random(seed).getrandbits(63))
        self._random = random.Random(seed)
        self.q = _q_network(state_size, settings.hidden, generator)
        self.target = copy.deepcopy(self.q)
        self.optimizer = torch.optim.Adam(self.q.parameters(), lr=settings.learning_rate)
        self.memory: list[tuple[torch.Tensor, int, float, torch.Tensor, bool]] = []
        self.decisions = 0
        self.updates = 0
        self.actions: list[int] = []
        self.losses: list[float] = []

    @property
    def exploration(self) -> float:
        """p_explr for the next decision: linear from ``explore_start`` to ``explore_end`` over explore_steps."""
        s = self.settings
        fraction = min(1.0, self.decisions / self.explore_steps)
        return s.explore_start + (s.explore_end - s.explore_start) * fraction

    def q_values(self, state) -> torch.Tensor:
        with torch.no_grad():
            return self.q(torch.as_tensor(state, dtype=torch.float64))

    def choose(self, state) -> int:
        """Step 5: a random action with probability p_explr, else argmax_a Q(s, a; θ)."""
        explore = self._random.random() < self.exploration
        action = self._random.randrange(2) if explore else int(torch.argmax(self.q_values(state)))
        self.decisions += 1
        self.actions.append(action)
        return action

    def learn(self, state, action: int, reward: float, next_state, terminal: bool) -> None:
        """Steps 3–4: store the transition (the memory keeps the newest ``replay_memory``), then one Adam step on
        the squared error (y_j − Q(s_j, a_j; θ))² over a random mini-batch, y_j of eq. (11); copy θ to the target
        every ``target_every`` steps. Learning starts once the memory holds a mini-batch."""
        if action not in (LOCAL, GLOBAL):
            raise ConfigError(f"`action` must be 0 (local) or 1 (global). Found {action!r}.")
        if not math.isfinite(reward):
            raise ConfigError(f"`reward` must be finite. Found {reward!r}.")
        s = self.settings
        self.memory.append((torch.as_tensor(state, dtype=torch.float64), action, float(reward),
                            torch.as_tensor(next_state, dtype=torch.float64), bool(terminal)))
        del self.memory[:-s.replay_memory]
        if len(self.memory) < s.minibatch:
            return
        batch = self._random.sample(self.memory, s.minibatch)
        states = torch.stack([t[0] for t in batch])
        actions = torch.tensor([t[1] for t in batch])
        rewards = torch.tensor([t[2] for t in batch], dtype=torch.float64)
        nexts = torch.stack([t[3] for t in batch])
        done = torch.tensor([t[4] for t in batch])
        with torch.no_grad():
            future = self.target(nexts).max(dim=1).values
            targets = torch.where(done, rewards, rewards + s.discount * future)
        predicted = self.q(states).gather(1, actions[:, None]).squeeze(1)
        loss = torch.mean((targets - predicted) ** 2)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.updates += 1
        self.losses.append(loss.item())
        if self.updates % s.target_every == 0:
            self.target.load_state_dict(self.q.state_dict())
