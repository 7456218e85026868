"""Files mpcdp writes never follow a link another user planted at their name, and credentials are refused
unless they are this user's own, unwritable by others (mpcdp.private_files)."""

from __future__ import annotations

import json
import os
import stat

import pytest
import torch

from mpcdp.errors import ConfigError


def _plant(folder, names, victims):
    """Links at ``names`` in ``folder`` to files in ``victims`` (which hold 'precious'); return the victims."""
    targets = []
    for name in names:
        target = victims / f"victim-{name}"
        target.write_text("precious")
        os.symlink(target, folder / name)
        targets.append(target)
    return targets


def test_a_saved_model_replaces_planted_links_and_leaves_their_targets_alone(tmp_path):
    from mpcdp.jobs.model_file import load, save

    shared, victims = tmp_path / "shared", tmp_path / "victims"
    shared.mkdir()
    victims.mkdir()
    targets = _plant(shared, ["model.pt", "model.json"], victims)
    theta = torch.arange(5, dtype=torch.float64)
    written = save(shared / "model.pt", theta, {"protocol": "test"})
    assert all(t.read_text() == "precious" for t in targets)
    for path in written:
        info = os.lstat(path)
        assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o644
    assert torch.equal(load(shared / "model.pt").theta, theta)


def test_a_record_and_its_plot_do_not_follow_planted_links(tmp_path):
    from mpcdp.jobs.report import save_figure, write_record

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    victims = tmp_path / "victims"
    victims.mkdir()
    targets = _plant(tmp_path, ["r.json", "r.md", "r.png"], victims)

    def plot(record, path):
        fig, ax = plt.subplots()
        ax.plot([0, 1], [record["x"], record["x"]])
        save_figure(fig, path, dpi=50)

    out = write_record(str(tmp_path / "r"), {"x": 1.0}, "# table", plot)
    assert all(t.read_text() == "precious" for t in targets)
    assert json.loads((tmp_path / "r.json").read_text())["x"] == 1.0
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and not (tmp_path / "r.png").is_symlink()
    assert "r.md" in " ".join(out["files"])


def _deployment(tmp_path):
    from mpcdp.transport.credentials import make_deployment

    folder = tmp_path / "keys"
    make_deployment(folder, 2)
    return folder


def test_a_deployment_of_this_user_loads(tmp_path):
    from mpcdp.transport.credentials import LinkSecurity

    assert LinkSecurity(_deployment(tmp_path), 0).rank == 0


@pytest.mark.parametrize("spoil, message", [
    (lambda f: os.chmod(f, 0o777), "writable by other users"),
    (lambda f: os.chmod(f / "ca.pem", 0o666), "ca.pem' is writable by other users"),
    (lambda f: os.chmod(f / "party-0-key.pem", 0o644), "private key readable by other users"),
    (lambda f: (os.replace(f / "ca.pem", f.parent / "elsewhere.pem"), os.symlink(f.parent / "elsewhere.pem",
                                                                                f / "ca.pem")),
     "is a symbolic link"),
])
def test_credentials_another_user_could_have_changed_are_refused(tmp_path, spoil, message):
    from mpcdp.transport.credentials import LinkSecurity

    folder = _deployment(tmp_path)
    spoil(folder)
    with pytest.raises(ConfigError, match=message):
        LinkSecurity(folder, 0)


def test_a_certificate_owned_by_another_user_is_refused(tmp_path):
    """As root (CI and these machines) the file can be given away; the check names the owner's uid."""
    from mpcdp.transport.credentials import LinkSecurity

    folder = _deployment(tmp_path)
    if os.geteuid() != 0:  # an unprivileged user cannot give a file away: refuse a foreign-writable one instead
        os.chmod(folder / "ca.pem", 0o646)
        with pytest.raises(ConfigError, match="writable by other users"):
            LinkSecurity(folder, 0)
        return
    os.chown(folder / "ca.pem", 54321, -1)
    with pytest.raises(ConfigError, match="owned by uid 54321"):
        LinkSecurity(folder, 0)
