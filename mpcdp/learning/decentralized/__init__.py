"""Decentralized DP without-replacement SGD (paper 004: Jin, He, Dai, "Decentralized Differentially Private
Without-Replacement Stochastic Gradient Descent", §III–IV, Algorithm 1, and the "DP-SGD-5" baseline of §VI).

Problem (§III): M nodes each hold n/M private examples; together they minimise F(w) = (1/n)·Σ f(w, (x_i, y_i)) with
the L2-regularised logistic loss (2), f(w, (x, y)) = ln(1 + exp(−y⟨w, x⟩)) + (λ/2)‖w‖², y ∈ {±1}, ‖x‖ <= 1. The
multi-class task is "one vs. all" (footnote 7): K binary models, the columns of W (d × K); prediction = argmax of
the K scores.

Lipschitz constant (§II, Example): λ = 0 → L = 1 (‖∇f‖ = ‖x‖·σ(−y⟨w,x⟩) <= ‖x‖ <= 1 for unit-norm rows);
λ > 0 with ‖w‖ <= R → L = 1 + λR (the paper's choice R = 1/λ gives L = 2). With λ > 0 every column of W is
projected onto the ball ‖w‖ <= R after each step, so the bound on ‖w‖ that L relies on holds (a projection after
the noisy step is post-processing).

Algorithm 1 (fully collaborative): the global model is handed from node to node; at every round each node in turn
takes its next mini-batch D_m(t) (without replacement: a random permutation of its own data, consecutive blocks of
b) and applies eq. (5):

    w_{t+1}^G = w_t^G − η_t·(∇f_{D_m(t)}(w_t^G) + N_t),   ∇f_{D_m(t)} = (1/b)·Σ_{i ∈ D_m(t)} ∇f_i.     (5)

Noise (Lemma 4, eq. (6); Theorem 1, eq. (4); Theorem 2): one replacement inside D_m(t) moves w_{t+1} by at most
Δ = 2η_t·L/b, and the released step noise η_t·N_t ~ N(0, σ²I) with σ = c·Δ/ε, c = √(2 ln(1.25/δ)), so N_t has
per-coordinate std 2·L·c/(b·ε) (independent of η_t). Each example of a node sits in exactly one mini-batch of the
pass (parallel composition, Remark 2), so per example the whole run is ONE Gaussian mechanism with noise multiplier
z = σ/Δ = c/ε. ``certify`` checks this with dp-accounting's PLD accountant (and reports RDP too); the certified ε
is the guarantee — Theorem 1 is only proven for ε < 1, and a run whose σ does not certify at the target is refused.

Unit of privacy across the K classifiers: every example enters all K binary models. The paper calibrates each
binary model to (ε, δ) (footnote 1 treats them as independent tasks), so the K-model release is a K-fold
composition. ``budget="model"`` (default) calibrates the whole one-vs-all model instead: the joint sensitivity of the
d × K step is √K·2η_t·L/b (each column moves by at most 2η_t·L/b), so the released W is (ε, δ)-DP.
``budget="per-classifier"`` reproduces the paper's setting; its certificate also reports ε of the K-model release.

Last mini-batch: if b does not divide a node's count, its last mini-batch is shorter and is still divided by b
(sum/b), which keeps the sensitivity at 2η_t·L/b and uses every example exactly once.

DP-SGD-5 (§VI, footnote 8, after the paper's [17]): a random walk picks one still-active node uniformly per
iteration; that node updates the global model with its next mini-batch; each update is (ε/5, δ/5)-DP (Gaussian,
c = √(2 ln(6.25/δ)), σ_grad = 2·L·c/(b·ε/5)); a node whose examples have each been visited 5 times (5 passes, a
fresh permutation per pass) stops; η_t = 1/√t with t the global iteration. Per example: 5 Gaussian mechanisms,
composed by the accountant.

Algorithm 2 (Deep-Q, §V): every node also keeps a private local model w^L and, at each turn, its Deep-Q controller
(:mod:`mpcdp.learning.deepq`, Algorithm 3) picks Local (w^L ← w^L − 2η∇f_D(w^L), nothing released) or Global (eqs.
(9)–(10): W ← (W + w^L)/2 − η(∇f_D(W) + N), w^L ← W). Lemma 5 bounds a global release's sensitivity by 2ηL/b when
η <= 1/(2μ) (μ = ¼ + λ here): an example used in a local step moves w^L by at most 4ηL/b (non-expansive gradient
steps), halved by the averaging. Each example reaches exactly one global release (the node's first global update
after its mini-batch; afterwards w^L = W is public), so the per-example certificate is Algorithm 1's (Theorem 5).
Not covered, by the paper or here: *when* a node updates the global model is public and depends on its private
losses (see :mod:`mpcdp.learning.deepq`). A node's final w^L is its own model (it contains its own data without
noise, the other nodes' data only through the noisy W).

Features (§VI): images flattened, PCA to 50 dimensions, rows normalised to the unit sphere. The PCA is fitted on
the *test* split (its images only, never labels): that split is public here, whereas fitting on the nodes' private
training images would leak them outside the DP accounting. Accuracy is then measured on the same test images, which
is mildly optimistic for the projection (unsupervised, 50 directions) but leaks nothing about training data.

Security model: honest nodes (footnote 3) that see the global model after every step, as does anyone; each node's
examples are protected by the noise it adds itself (no trusted party, no MPC in this module). ``node_update`` is
the whole of one node's step, so nodes can run as separate processes handing the model on.

Declared cost (per node update): b·d·K multiply-adds for the gradient, d·K discrete Gaussian draws (≈ 1.6 candidates
of 12 words each per draw), one d×K float model
received and sent. Algorithm 1: ⌈n_m/b⌉ updates per node; DP-SGD-5: 5·⌈n_m/b⌉ updates per node.

Released bits (:func:`release_on_grid`). A noisy update releases W_new = (round(2^p·(W − η·∇f)) + N)·2^-p: the
update rounded to a grid 2^-p with η·σ·2^p ≈ 2^21 units (:func:`~mpcdp.accounting.grid.release_precision`), N the
exact discrete Gaussian sampler of :mod:`mpcdp.noise.discrete_gaussian` with σ_units >= z·Δ_int, Δ_int =
⌈η·Δ·2^p + √(d·K)⌉ (W is public, so only the rounding of the gradient step moves with the data). The released
noise multiplier σ_units/Δ_int is at least the calibrated z, and the certificate adds the sampler's residual over
every noise coordinate the run opens (:func:`noise_and_certificate` with ``coordinates``; the theorem in
:mod:`mpcdp.accounting.grid`). With λ > 0 the projection comes after the release (post-processing).

Noise source: each node's ``noise_source``, a :class:`~mpcdp.randomness.KeyedStream` under an OS-CSPRNG key by
default; :func:`make_nodes` with a ``seed`` gives every node a seeded NumPy generator instead (reproducible
experiments, predictable noise).
"""

from mpcdp.accounting.decentralized import (  # noqa: F401 - the package's public API
    CALIBRATIONS, PrivacyCertificate, algorithm2_noise, calibrated_noise_multiplier, certify, gaussian_c,
    gradient_noise_std, lipschitz_constant, noise_and_certificate, smoothness, step_noise_std, update_sensitivity,
    with_residual)
from mpcdp.learning.decentralized.algorithm2 import (  # noqa: F401
    DeepQNode, algorithm2_turn, make_deepq_nodes, run_algorithm2)
from mpcdp.learning.decentralized.features import PCA_DIMS, fit_pca, prepare_features  # noqa: F401
from mpcdp.learning.decentralized.nodes import (  # noqa: F401
    NodeState, accuracy, gradient, loss, make_nodes, node_update, one_vs_all_labels, predict, release_on_grid)
from mpcdp.learning.decentralized.runs import (  # noqa: F401
    DEFAULT_VISITS, RunResult, run_algorithm1, run_coordinates, run_dpsgd5, walk_schedule)
