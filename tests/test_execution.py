"""One vocabulary for where the sums happen: every job reads `backend` through mpcdp.execution."""

import pytest

from mpcdp.errors import ConfigError
from mpcdp.execution import MPC, PROCESSES, SIMULATED, backend_for


def test_a_job_takes_its_own_subset_and_names_it_when_refusing():
    assert backend_for("mpc", (MPC, SIMULATED), "`mpcdp train`") == MPC
    with pytest.raises(ConfigError, match=r"`backend` must be one of \['mpc', 'simulated'\] for `mpcdp train`. "
                                          r"Found 'processes'"):
        backend_for("processes", (MPC, SIMULATED), "`mpcdp train`")


def test_the_former_name_of_processes_is_still_read():
    assert backend_for("plain", (SIMULATED, PROCESSES, MPC), "`mpcdp collab`") == PROCESSES
    with pytest.raises(ConfigError, match="Found 'plain'"):
        backend_for("plain", (SIMULATED, MPC), "`mpcdp train`")


def test_every_job_refuses_a_backend_it_lacks(tmp_path):
    from mpcdp.jobs import collab, decentralized, train

    with pytest.raises(ConfigError, match="for `mpcdp train`"):
        train.plan_from("protocols/quickstart-a9a.toml", backend="processes")
    with pytest.raises(ConfigError, match="for `mpcdp collab`"):
        collab.plan_from("protocols/collab-lending.toml", backend="nodes")
    with pytest.raises(ConfigError, match="for `mpcdp decentralized`"):
        decentralized.plan_from("protocols/decentralized-mnist5k.toml", backend="mpc")
