"""One handshake over the whole resolved plan: parties started on their own (as on separate hosts) whose
protocol files differ in a parameter that changes the released bits or the certificate are refused on every
party, naming the field and each party's value, before any share is sent — on shipped data and on each party's
own file alike (both start through :mod:`mpcdp.jobs.secure_run`)."""

import os
import pathlib
import subprocess

import numpy as np
import pandas as pd
import pytest

from mpcdp.runtime.harness import free_port

import forked

ROOT = pathlib.Path(__file__).resolve().parents[1]
MPCDP = str(ROOT / ".venv" / "bin" / "mpcdp")
PARTIES = 2
PROTOCOL = """name = "handshake-test"
dataset = "breast-cancer"
algorithm = "dp-sgd"
[privacy]
epsilon = {epsilon}
delta = 1e-3
[training]
parties = 2
batch = 20
passes = 1
c1 = {clip}
learning_rate = 0.1
seed = 0
"""


def _protocols(tmp_path, odd: dict[str, float]) -> list[str]:
    """Party 0's protocol file (and the dealer's) and party 1's, which differs in ``odd``."""
    paths = []
    for rank, settings in enumerate([{"epsilon": 0.5, "clip": 1.0}, {"epsilon": 0.5, "clip": 1.0, **odd}]):
        path = tmp_path / f"party{rank}.toml"
        path.write_text(PROTOCOL.format(**settings))
        paths.append(str(path))
    return paths + [paths[0]]  # the dealer reads party 0's


def _own_files(tmp_path) -> list[list[str]]:
    """Each data party's `--data` arguments: its own small CSV (label ±1 in column `y`); the dealer has none."""
    rng = np.random.default_rng(0)
    arguments = []
    for rank in range(PARTIES):
        frame = pd.DataFrame(rng.random((30, 4)), columns=[f"f{i}" for i in range(4)])
        frame["y"] = rng.choice([-1, 1], size=30)
        frame.to_csv(tmp_path / f"own{rank}.csv", index=False)
        arguments.append(["--data", str(tmp_path / f"own{rank}.csv"), "--label", "y"])
    return arguments + [[]]


EPSILON = "`epsilon`: party 0 = 0.5, party 1 = 0.2"
CLIP = "`params.c1`: party 0 = 1.0, party 1 = 2.0"


@pytest.mark.parametrize("odd, named, own_data", [
    ({"epsilon": 0.2, "clip": 2.0}, [EPSILON, CLIP], False),  # two fields apart: the refusal names each one
    ({"clip": 2.0}, [CLIP], True)])
def test_separate_parties_whose_protocols_differ_are_refused_naming_the_field(tmp_path, deployment, odd, named,
                                                                               own_data):
    port = str(free_port())
    data = _own_files(tmp_path) if own_data else [[]] * (PARTIES + 1)
    procs = [forked.Popen([MPCDP, "party", "--job", "train", "--protocol", protocol, "--timeout", "60",
                               *data[rank]],
                              env=dict(os.environ, RANK=str(rank), WORLD_SIZE=str(PARTIES), MASTER_ADDR="127.0.0.1",
                                       MASTER_PORT=port, MPCDP_CREDENTIALS=str(deployment)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for rank, protocol in enumerate(_protocols(tmp_path, odd))]
    try:
        done = [proc.communicate(timeout=120) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    for rank in range(PARTIES):
        code, err = procs[rank].returncode, done[rank][1]
        assert code != 0, f"party {rank} exited 0: {err[-1500:]}"
        for field in named:
            assert field in err, (rank, field, err[-1500:])
        assert "checked before any share was sent" in err, (rank, err[-1500:])
        assert "joined; training" not in err  # no party got past the handshake
    assert procs[PARTIES].returncode != 0, "the dealer served a run that was refused"


def test_every_field_of_a_resolved_plan_is_in_the_handshake(tmp_path):
    """The handshake covers the whole plan: each field of TrainPlan (a new one too) is compared before any share,
    the ``[mpc]`` table as the MPC configuration the handshake adds (MpcContext.join)."""
    import dataclasses

    from mpcdp.jobs.secure_run import Job, Plan
    from mpcdp.jobs.train import TrainPlan, plan_from
    from mpcdp.registry import members

    plan = plan_from(_protocols(tmp_path, {})[0])
    described = Job("test").describe(plan)
    fields = {f.name for f in dataclasses.fields(TrainPlan)}
    compared = {"protocol" if f == "name" else f for f in fields - {"mpc"}}  # the plan's name, as "protocol"
    assert compared <= set(described), compared - set(described)
    assert set(members(Plan)) == fields  # the secure run's written interface of a plan is the whole plan
    assert described["params"]["c1"] == 1.0 and described["epsilon"] == 0.5 and described["protocol"] == plan.name
