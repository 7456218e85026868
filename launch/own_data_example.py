"""One host's party: train a small MLP on this host's own CSV with the other hosts — secure, ε certified.

    RANK=j WORLD_SIZE=3 MASTER_ADDR=HOST0 MASTER_PORT=29500 .venv/bin/python launch/own_data_example.py \\
        mine.csv [mine-test.csv] [protocols/own-data-mlp.toml]

Every party runs this with its own file (a CSV with an `income_over_50k` column of 0/1 labels; every other
column a number); the dealer runs the same with RANK=3 on a host of its own (its file argument is not
read). Prints this party's result as one JSON line.
"""

import hashlib
import json
import os
import sys

import torch

import mpcdp


class SmallMlp(torch.nn.Module):
    def __init__(self, features: int, hidden: int = 16, classes: int = 2):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(features, hidden), torch.nn.Tanh(),
                                          torch.nn.Linear(hidden, classes))

    def forward(self, x):
        return self.layers(x)


if __name__ == "__main__":
    train_file = sys.argv[1]
    test_file = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2].endswith(".csv") else None
    protocol = next((a for a in sys.argv[2:] if a.endswith(".toml")), "protocols/own-data-mlp.toml")
    features = len(open(train_file).readline().split(",")) - 1 if os.path.exists(train_file) else 1
    torch.manual_seed(0)  # every party starts from the same model
    result = mpcdp.train(SmallMlp(features), train_file, test=test_file, label="income_over_50k",
                         protocol=protocol)
    if result is None:  # this host ran the dealer
        print(json.dumps({"role": "dealer"}))
        raise SystemExit(0)
    print(json.dumps({"epsilon": result.epsilon, "delta": result.delta, "records": result.parties_records,
                      "held_out": result.held_out, "theta_sha256": hashlib.sha256(result.theta.numpy().tobytes()).hexdigest()}))
