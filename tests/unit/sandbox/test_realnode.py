"""Issue 44 phase B: the pure parts of the sandbox's real node (sandbox/realnode.py): containerd's config, the base
OCI spec with the host's read-only mounts, the OCI image layouts imported without a registry, the GPU capacity patch
and the mount sweep of `sandbox down`."""
from __future__ import annotations

import hashlib
import io
import json
import socket
import tarfile
import tomllib
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from kueue_cohorts.sandbox import realnode
from kueue_cohorts.sandbox.realnode import RealNodePaths

PATHS = RealNodePaths(Path("/state/sandbox/real-node"))


def test_containerd_keeps_every_path_under_the_real_nodes_dir_and_runs_the_pinned_runc():
    config = tomllib.loads(realnode.containerd_config(PATHS, Path("/cache/bin/runc-1.5.3/runc"),
                                                      [Path("/cache/bin/bridge-1.10.0")]))
    assert config["version"] == 4  # containerd 2.4 migrates 3 with a warning
    assert (config["root"], config["state"], config["plugins"]["io.containerd.server.v1.grpc"]["address"]) == (
        "/state/sandbox/real-node/containerd/root", "/state/sandbox/real-node/containerd/state",
        "/state/sandbox/real-node/containerd.sock")
    runtime = config["plugins"]["io.containerd.cri.v1.runtime"]
    runc = runtime["containerd"]["runtimes"]["runc"]
    assert runc["options"] == {"BinaryName": "/cache/bin/runc-1.5.3/runc", "SystemdCgroup": False,
                               "Root": "/state/sandbox/real-node/containerd/state/runc"}
    assert runtime["restrict_oom_score_adj"] is True
    assert runc["base_runtime_spec"] == str(PATHS.base_spec)
    assert runtime["netns_mounts_under_state_dir"] is True  # else /var/run/netns
    assert runtime["cni"]["bin_dirs"] == ["/cache/bin/bridge-1.10.0"]
    assert config["plugins"]["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"] == realnode.PAUSE_IMAGE
    assert {"io.containerd.nri.v1.nri", "io.containerd.internal.v1.opt"} <= set(config["disabled_plugins"])


def test_the_base_spec_keeps_containerds_mounts_and_adds_the_host_read_only(tmp_path):
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /opt/pyenv/versions/3.11.7/bin\nversion = 3.11.7\n")
    mounts = realnode.host_mounts(venv)
    assert mounts == [Path("/usr"), Path("/opt/pyenv/versions/3.11.7"), venv.resolve()]
    default = {"ociVersion": "1.2.1", "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}]}
    spec = realnode.base_runtime_spec(default, mounts)
    assert spec["mounts"][0] == default["mounts"][0] and len(default["mounts"]) == 1
    for mount, path in zip(spec["mounts"][1:], mounts, strict=True):
        assert mount == {"destination": str(path), "type": "bind", "source": str(path),
                         "options": ["rbind", "ro", "nosuid", "nodev"]}


def test_an_interpreter_under_usr_is_not_mounted_twice(tmp_path):
    (tmp_path / "pyvenv.cfg").write_text("home = /usr/local/bin\n")
    assert realnode.host_mounts(tmp_path) == [Path("/usr"), tmp_path.resolve()]


def _members(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name: (tar.extractfile(m).read() if m.isfile() else b"") for m in tar.getmembers()}  # type: ignore[union-attr]


@given(st.binary(max_size=64), st.sampled_from(["a.local/x:1", "registry.k8s.io/pause:3.10.2"]))
def test_an_oci_layout_is_self_consistent_and_named_for_ctr_import(payload, name):
    layer = realnode.skeleton_layer({"pause": (payload, 0o755)})
    files = _members(realnode.oci_layout_tar(name, layer, {"Entrypoint": ["/pause"]}))
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    for path, data in files.items():
        if path.startswith("blobs/sha256/") and data:
            assert path.rsplit("/", 1)[1] == hashlib.sha256(data).hexdigest()
    [entry] = json.loads(files["index.json"])["manifests"]
    assert entry["annotations"] == {"io.containerd.image.name": name,
                                    "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]}
    manifest = json.loads(files[f"blobs/sha256/{entry['digest'][7:]}"])
    config = json.loads(files[f"blobs/sha256/{manifest['config']['digest'][7:]}"])
    assert config["rootfs"]["diff_ids"] == [manifest["layers"][0]["digest"]]
    assert config["config"] == {"Entrypoint": ["/pause"]}
    layer_files = _members(files[f"blobs/sha256/{manifest['layers'][0]['digest'][7:]}"])
    assert layer_files["pause"] == payload


def test_the_skeleton_links_the_merged_usr_layout():
    with tarfile.open(fileobj=io.BytesIO(realnode.skeleton_layer())) as tar:
        links = {m.name: m.linkname for m in tar.getmembers() if m.issym()}
        modes = {m.name: m.mode for m in tar.getmembers() if m.isdir()}
    assert links == {"bin": "usr/bin", "lib": "usr/lib", "lib64": "usr/lib64", "sbin": "usr/sbin"}
    assert modes["tmp"] == modes["workspace"] == 0o1777


def test_the_gpu_capacity_patch_escapes_the_resource_names():
    capacity = {"cpu": "8", "memory": "32Gi", "nvidia.com/gpualloc": "1", "nvidia.com/gpumem": 2048}
    assert realnode.extended_capacity(capacity) == {"nvidia.com/gpualloc": "1", "nvidia.com/gpumem": "2048"}
    assert realnode.capacity_patch(realnode.extended_capacity(capacity)) == [
        {"op": "add", "path": "/status/capacity/nvidia.com~1gpualloc", "value": "1"},
        {"op": "add", "path": "/status/capacity/nvidia.com~1gpumem", "value": "2048"}]


def test_the_kubelet_runs_on_cgroup_v1_without_swap_checks_tainted_on_loopback(tmp_path):
    config = realnode.kubelet_configuration(PATHS, {"real-node-kubelet": 1, "real-node-kubelet-healthz": 2},
                                            tmp_path / "ca.crt")
    assert (config["failCgroupV1"], config["failSwapOn"], config["cgroupDriver"]) == (False, False, "cgroupfs")
    assert config["cgroupRoot"] == realnode.CGROUP_ROOT
    assert config["registerWithTaints"] == [{"key": realnode.TAINT_KEY, "value": "true", "effect": "NoSchedule"}]
    assert config["authentication"]["anonymous"] == {"enabled": False}
    assert (config["address"], config["healthzBindAddress"], config["readOnlyPort"]) == ("127.0.0.1", "127.0.0.1", 0)


MOUNTINFO = """\
22 1 254:0 / / rw,relatime - ext4 /dev/vda rw
91 22 0:50 / /state/sandbox/real-node/containerd/state/io.containerd.runtime.v2.task/k8s.io/a/rootfs rw - overlay o rw
92 22 0:51 / /state/sandbox/real-node/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/dshm rw - tmpfs tmpfs rw
93 92 0:52 / /state/sandbox/real-node/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/dshm/x rw - tmpfs tmpfs rw
94 22 0:53 / /state/sandbox/real-node-other rw - tmpfs tmpfs rw
95 22 0:54 / /state/sandbox/real-node/kubelet/pods/with\\040space rw - tmpfs tmpfs rw
"""


def test_down_unmounts_everything_below_the_real_node_deepest_first_and_nothing_beside_it():
    found = realnode.mounts_below(PATHS.root, MOUNTINFO)
    assert Path("/state/sandbox/real-node-other") not in found
    assert Path("/state/sandbox/real-node/kubelet/pods/with space") in found
    assert len(found) == 4
    dshm = Path("/state/sandbox/real-node/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/dshm")
    assert found.index(dshm / "x") < found.index(dshm)


def test_stale_shim_sockets_go_and_live_ones_stay(tmp_path):
    directory = tmp_path / "containerd" / "s"
    directory.mkdir(parents=True)
    live, dead = socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)
    live.bind(str(directory / "live"))
    live.listen()
    dead.bind(str(directory / "dead"))
    dead.close()  # a killed shim's socket file: nothing listens on it
    try:
        assert realnode.remove_stale_sockets(directory) == [directory / "dead"]
        assert (directory / "live").exists() and directory.is_dir()
    finally:
        live.close()
    (directory / "live").unlink()
    assert realnode.remove_stale_sockets(directory) == []
    assert not (tmp_path / "containerd").exists()  # both left empty: removed


def test_the_cgroup_root_is_made_in_every_hierarchy_with_the_parents_cpus(tmp_path):
    for name in ("cpuset", "memory"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "cgroup.procs").write_text("")
    (tmp_path / "cpuset" / "cpuset.cpus").write_text("0-1\n")
    (tmp_path / "cpuset" / "cpuset.mems").write_text("0\n")
    (tmp_path / "not-a-hierarchy").mkdir()
    made = realnode.prepare_cgroup_root(tmp_path, "/kc-node")
    assert sorted(made) == [tmp_path / "cpuset" / "kc-node", tmp_path / "memory" / "kc-node"]
    # the kernel creates these files empty in a new v1 cpuset cgroup; here they are made so
    (tmp_path / "cpuset" / "kc-node" / "cpuset.cpus").write_text("")
    (tmp_path / "cpuset" / "kc-node" / "cpuset.mems").write_text("")
    realnode.prepare_cgroup_root(tmp_path, "/kc-node")
    assert (tmp_path / "cpuset" / "kc-node" / "cpuset.cpus").read_text() == "0-1\n"
    assert (tmp_path / "cpuset" / "kc-node" / "cpuset.mems").read_text() == "0\n"


def test_only_the_log_links_into_this_nodes_pod_logs_are_removed(tmp_path):
    links, ours, theirs = tmp_path / "containers", tmp_path / "real-node" / "pod-logs", tmp_path / "other"
    links.mkdir()
    (links / "a.log").symlink_to(ours / "ns_a_uid" / "main" / "0.log")
    (links / "b.log").symlink_to(theirs / "ns_b_uid" / "main" / "0.log")
    assert realnode.remove_log_links(ours, links) == [links / "a.log"]
    assert [p.name for p in links.iterdir()] == ["b.log"]
    (links / "b.log").unlink()
    assert realnode.remove_log_links(ours, links) == [] and not links.exists()
