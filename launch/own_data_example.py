"""One host's party: train a small MLP on this host's own CSV with the other hosts — secure, ε certified.

    RANK=j WORLD_SIZE=3 MASTER_ADDR=HOST0 MASTER_PORT=29500 .venv/bin/python launch/own_data_example.py \\
        mine.csv [--test mine-test.csv] [--protocol protocols/own-data-mlp.toml] [--no-noise]

or on hosts started the torchrun way (every host, the dealer's too; WORLD_SIZE then counts the dealer):

    torchrun --nnodes=4 --node_rank=j --nproc_per_node=1 --master_addr=HOST0 --master_port=29500 \\
        launch/own_data_example.py mine.csv

Every party runs this with its own file (a CSV with an `income_over_50k` column of 0/1 labels; every other
column a number); the dealer runs the same with the last rank on a host of its own (its file argument is not
read). Prints this party's result as one JSON line: ε, every party's record count, this party's held-out
metrics and the parties' weighted mean, and the released model's SHA-256.
"""

import argparse
import hashlib
import json
import os

import torch

import mpcdp


class SmallMlp(torch.nn.Module):
    def __init__(self, features: int, hidden: int = 16, classes: int = 2):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(features, hidden), torch.nn.Tanh(),
                                          torch.nn.Linear(hidden, classes))

    def forward(self, x):
        return self.layers(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="this party's training CSV")
    parser.add_argument("--test", help="this party's held-out CSV")
    parser.add_argument("--protocol", default="protocols/own-data-mlp.toml")
    parser.add_argument("--no-noise", action="store_true",
                        help="train without noise (nothing certified), to compare with another run bit for bit")
    args = parser.parse_args()
    features = len(open(args.data).readline().split(",")) - 1 if os.path.exists(args.data) else 1
    torch.manual_seed(0)  # every party starts from the same model
    result = mpcdp.train(SmallMlp(features), args.data, test=args.test, label="income_over_50k",
                         protocol=args.protocol, noise=not args.no_noise)
    if result is None:  # this host ran the dealer
        print(json.dumps({"role": "dealer"}))
        return
    print(json.dumps({"epsilon": result.epsilon, "delta": result.delta, "records": result.parties_records,
                      "held_out": result.held_out,
                      "theta_sha256": hashlib.sha256(result.theta.numpy().tobytes()).hexdigest()}))


if __name__ == "__main__":
    main()
