"""The sandbox's one real node (``python -m kueue_cohorts.sandbox up --real-node``, issue 44): a kubelet, containerd
and runc that
run real containers beside the kwok nodes, joined to the same kube-apiserver.

What it is (every binary from a pinned module, toolchain/versions.toml group ``real-node``):

- containerd 2.4.2 with its own root, state and socket under ``<state dir>/real-node/`` (config version 4; NRI and
  the ``opt`` plugin off, so nothing is written to ``/var/run/nri`` or ``/opt/containerd``; network namespaces
  under its state dir), the runc v1.5.3 shim, the CNI plugins v1.10.0 (bridge ``kcrn0`` with host-local addresses
  from :data:`POD_SUBNET`, loopback);
- the kubelet 1.36.3 (cgroupfs driver, ``failCgroupV1: false`` since this host has cgroup v1 and the kubelet refuses
  it by default since 1.35, ``failSwapOn: false``, every pod cgroup under :data:`CGROUP_ROOT`), authenticated by a
  client certificate ``system:node:<name>`` (group ``system:nodes``) of the sandbox CA, which a ClusterRoleBinding
  gives the ``system:node`` ClusterRole (the apiserver runs RBAC only, no Node authorizer);
- the node is labelled :data:`NODE_LABEL` plus the first node pool's labels (so the stack's ResourceFlavor, whose
  nodeLabels come from its pools, matches it), tainted :data:`TAINT_KEY` ``NoSchedule`` (only a pod that tolerates
  it lands there), and advertises that pool's extended resources (GPU slices) by a PATCH of ``status.capacity``, as
  the Kubernetes task "Advertise Extended Resources for a Node" does; the kubelet keeps them (no device plugin
  claims them), and re-registration zeroes them, so ``up`` patches again.

Images without a registry: two OCI image layouts are written with the standard library (:func:`oci_layout_tar`)
and imported into containerd's ``k8s.io`` namespace with ``ctr images import``:

- :data:`PAUSE_IMAGE`, upstream's ``pause`` (C, from the pinned Kubernetes module) as the pod sandbox;
- :data:`HOST_PYTHON_IMAGE`, a skeleton (``bin``, ``lib``, ``lib64``, ``sbin`` -> ``usr/...``, empty ``etc``,
  ``tmp``, ``workspace``) whose programs are the host's: the runtime's base OCI spec (``base_runtime_spec``) bind
  mounts the host's ``/usr``, the Python interpreter's prefix and the project venv read-only into every container
  at their host paths, and the image's ``PATH`` starts with the venv's ``bin``. So ``python -m trainer`` runs the
  project's interpreter and packages unmodified, and nothing of them can be written from inside.

Not modelled: image pulls (every image must be imported), a registry's latency, other nodes' kubelets, GPUs (the
capacity is advertised, no device exists), seccomp (runc is built without libseccomp: a container that asks for a
seccomp profile fails to start), Services (no kube-proxy), cluster DNS.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import socket
import subprocess
import tarfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kueue_cohorts.sandbox.ports import LOOPBACK

NODE_NAME = "real-node"
"""The real node's name (``--hostname-override``)."""
NODE_LABEL = ("kueue-cohorts/real-node", "true")
"""The label of the real node; a pod that must run there selects it (nodeSelector) and tolerates :data:`TAINT_KEY`."""
TAINT_KEY = "kueue-cohorts/real-node"
"""The NoSchedule taint's key (value ``true``): pods that do not tolerate it never land on the real node."""
COMPONENTS = ("containerd", "kubelet")
"""The real node's processes in start order (stopped in reverse), recorded in the sandbox state like the others."""
BINARIES = ("containerd", "containerd-shim-runc-v2", "ctr", "runc", "kubelet", "loopback", "bridge", "host-local",
            "pause")
"""The toolchain executables it runs (toolchain.group("real-node"))."""
PAUSE_IMAGE = "registry.k8s.io/pause:3.10.2"
"""The pod sandbox image (containerd's ``pinned_images.sandbox``), built from the pinned module's pause.c."""
HOST_PYTHON_IMAGE = "kueue-cohorts.local/host-python:1"
"""The image of containers that run the host's Python (see the module docstring)."""
CTR_NAMESPACE = "k8s.io"
"""containerd's namespace of the CRI plugin: images imported there are what the kubelet sees."""
BRIDGE = "kcrn0"
POD_SUBNET = "10.244.77.0/24"
"""The pods' addresses on the real node (host-local); kwok's nodes use their own CIDR."""
CGROUP_ROOT = "/kueue-cohorts-real-node"
"""The kubelet's ``cgroupRoot``: every pod cgroup of the real node is below it, which ``down`` empties."""
PAUSE_USER = 65535
"""The user of upstream's pause image (build/pause/Dockerfile ``USER 65535:65535``)."""


@dataclass(frozen=True)
class RealNodePaths:
    """The real node's files under ``root`` (``<sandbox state dir>/real-node``)."""

    root: Path

    @property
    def socket(self) -> Path:
        """containerd's gRPC socket (the kubelet's ``containerRuntimeEndpoint``)."""
        return self.root / "containerd.sock"

    @property
    def containerd_root(self) -> Path:
        """containerd's persistent root (content store, snapshots)."""
        return self.root / "containerd" / "root"

    @property
    def containerd_state(self) -> Path:
        """containerd's state dir (tasks, rootfs mounts, network namespaces)."""
        return self.root / "containerd" / "state"

    @property
    def containerd_config(self) -> Path:
        """containerd's config.toml."""
        return self.root / "containerd" / "config.toml"

    @property
    def base_spec(self) -> Path:
        """The runc runtime's base OCI spec (the host mounts)."""
        return self.root / "containerd" / "base-spec.json"

    @property
    def cni_conf_dir(self) -> Path:
        """The CNI network configuration directory containerd reads."""
        return self.root / "cni" / "net.d"

    @property
    def cni_ipam_dir(self) -> Path:
        """host-local's address leases."""
        return self.root / "cni" / "ipam"

    @property
    def kubelet_dir(self) -> Path:
        """The kubelet's ``--root-dir`` (pods, volumes, its serving certificate)."""
        return self.root / "kubelet"

    @property
    def kubelet_config(self) -> Path:
        """The KubeletConfiguration file."""
        return self.root / "kubelet-config.yaml"

    @property
    def kubeconfig(self) -> Path:
        """The kubelet's kubeconfig (its node identity)."""
        return self.root / "kubelet.kubeconfig"

    @property
    def pod_logs(self) -> Path:
        """The kubelet's ``podLogsDir`` (containers' logs)."""
        return self.root / "pod-logs"

    @property
    def images(self) -> Path:
        """The OCI layout tars imported into containerd."""
        return self.root / "images"


def containerd_config(paths: RealNodePaths, runc: Path, cni_bin_dirs: Sequence[Path]) -> str:
    """Return containerd's config.toml (version 4, containerd v2.4.2 ``internal/cri/config/config.go`` keys) for
    ``paths``: socket, root and state under the real node's dir, runc at ``runc`` as the default runtime
    (cgroupfs: ``SystemdCgroup = false``; its ``--root`` under the state dir, not ``/run/containerd/runc``) with
    :attr:`RealNodePaths.base_spec` as its base spec, the CNI plugins in
    ``cni_bin_dirs``, :data:`PAUSE_IMAGE` as the pod sandbox image, network namespaces under the state dir, and the
    NRI and ``opt`` plugins disabled (both write outside the state dir), ``restrict_oom_score_adj`` (no container's
    OOM score below containerd's own: without CAP_SYS_RESOURCE, as on the machines this runs on, runc init fails
    to write the pause container's -998 with "Permission denied"). In version 4 the sockets are the
    ``io.containerd.server.v1.grpc`` and ``.ttrpc`` plugins' ``address`` (``containerd config default``); the
    shims' sockets stay under containerd's built-in ``/run/containerd/s`` (pkg/shim ``socketRoot``, not
    configurable)."""
    def q(value: object) -> str:
        return json.dumps(str(value))

    bins = ", ".join(q(d) for d in cni_bin_dirs)
    return f"""version = 4
root = {q(paths.containerd_root)}
state = {q(paths.containerd_state)}
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
                    "io.containerd.snapshotter.v1.blockfile", "io.containerd.tracing.processor.v1.otlp",
                    "io.containerd.internal.v1.tracing"]

[plugins.'io.containerd.server.v1.grpc']
  address = {q(paths.socket)}

[plugins.'io.containerd.server.v1.ttrpc']
  address = {q(str(paths.socket) + ".ttrpc")}

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = {q(PAUSE_IMAGE)}

[plugins.'io.containerd.cri.v1.runtime']
  enable_selinux = false
  netns_mounts_under_state_dir = true
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      base_runtime_spec = {q(paths.base_spec)}
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = {q(runc)}
        Root = {q(paths.containerd_state / "runc")}
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [{bins}]
    conf_dir = {q(paths.cni_conf_dir)}
    max_conf_num = 1

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "{LOOPBACK}"
  stream_server_port = "0"
"""


def host_mounts(venv: Path) -> list[Path]:
    """Return the host directories every container of the real node gets read-only at the same path: ``/usr``
    (the C library and the system's programs; ``/bin``, ``/lib`` ... of the image link into it), the Python
    interpreter's prefix of ``venv`` (``home`` of its ``pyvenv.cfg``, parent directory) unless it is under
    ``/usr``, and ``venv`` itself. Raises FileNotFoundError when ``venv`` has no pyvenv.cfg."""
    cfg = {key.strip(): value.strip() for key, value in
           (line.split("=", 1) for line in (venv / "pyvenv.cfg").read_text().splitlines() if "=" in line)}
    prefix = Path(cfg["home"]).parent
    mounts = [Path("/usr")]
    if not prefix.is_relative_to("/usr"):
        mounts.append(prefix)
    mounts.append(venv.resolve())
    return mounts


def base_runtime_spec(default_spec: Mapping[str, Any], mounts: Iterable[Path]) -> dict[str, Any]:
    """Return containerd's default OCI spec ``default_spec`` (``ctr oci spec``) with a read-only recursive bind
    mount of every path of ``mounts`` at the same path appended (containerd's CRI starts every container's spec from
    the runtime's ``base_runtime_spec`` and adds the pod's own mounts)."""
    spec: dict[str, Any] = json.loads(json.dumps(default_spec))
    spec["mounts"] = [*spec.get("mounts", []), *({"destination": str(p), "type": "bind", "source": str(p),
                                                  "options": ["rbind", "ro", "nosuid", "nodev"]} for p in mounts)]
    return spec


def cni_config(paths: RealNodePaths) -> dict[str, Any]:
    """Return the CNI network list of the real node (CNI spec 1.0.0): a ``bridge`` (:data:`BRIDGE`, the gateway,
    no masquerade: pods need no route out) with ``host-local`` addresses from :data:`POD_SUBNET`, leases under
    :attr:`RealNodePaths.cni_ipam_dir`."""
    return {"cniVersion": "1.0.0", "name": "kueue-cohorts-real-node", "plugins": [{
        "type": "bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": False, "hairpinMode": True,
        "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_SUBNET}]], "dataDir": str(paths.cni_ipam_dir)},
    }]}


def kubelet_configuration(paths: RealNodePaths, ports: Mapping[str, int], ca_file: Path) -> dict[str, Any]:
    """Return the KubeletConfiguration (kubelet.config.k8s.io/v1beta1, Kubernetes v1.36.3) of the real node.

    Serves on loopback (``ports['real-node-kubelet']``, healthz on ``ports['real-node-kubelet-healthz']``) with
    webhook authentication and authorization (no anonymous access, clients of ``ca_file``); cgroupfs driver under
    :data:`CGROUP_ROOT`; ``failCgroupV1: false`` (pkg/kubelet/apis/config/v1beta1/defaults.go defaults it to true
    and this host is cgroup v1); ``failSwapOn: false``; the taint :data:`TAINT_KEY` at registration; hard eviction
    only when memory or disk is nearly gone (a shared dev disk is often more than 85% full, the default's limit);
    no cluster DNS (the sandbox has none).
    """
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": LOOPBACK,
        "port": ports["real-node-kubelet"],
        "readOnlyPort": 0,
        "healthzBindAddress": LOOPBACK,
        "healthzPort": ports["real-node-kubelet-healthz"],
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                           "x509": {"clientCAFile": str(ca_file)}},
        "authorization": {"mode": "Webhook"},
        "containerRuntimeEndpoint": f"unix://{paths.socket}",
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": CGROUP_ROOT,
        "failCgroupV1": False,
        "failSwapOn": False,
        "podLogsDir": str(paths.pod_logs),
        "registerWithTaints": [{"key": TAINT_KEY, "value": "true", "effect": "NoSchedule"}],
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                         "nodefs.inodesFree": "1%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "resolvConf": "/etc/resolv.conf",
        "nodeStatusUpdateFrequency": "4s",
        "syncFrequency": "10s",
        "serializeImagePulls": False,
        "maxPods": 20,
    }


def kubelet_args(binary: Path, paths: RealNodePaths, labels: Mapping[str, str]) -> list[str]:
    """Return the kubelet's argv: its config and node kubeconfig, ``--root-dir`` under the real node's dir, node
    name :data:`NODE_NAME`, the node ``labels`` (``--node-labels``). No ``--node-ip``: the kubelet refuses a loopback
    one ("nodeIP can't be loopback address") and takes the host's address; it serves on loopback only."""
    return [str(binary), f"--config={paths.kubelet_config}", f"--kubeconfig={paths.kubeconfig}",
            f"--root-dir={paths.kubelet_dir}", f"--cert-dir={paths.kubelet_dir / 'pki'}",
            f"--hostname-override={NODE_NAME}",
            f"--node-labels={','.join(f'{k}={v}' for k, v in sorted(labels.items()))}", "--v=1"]


def containerd_args(binary: Path, paths: RealNodePaths) -> list[str]:
    """Return containerd's argv with its config (:func:`containerd_config`)."""
    return [str(binary), f"--config={paths.containerd_config}", "--log-level=warn"]


def node_rbac() -> dict[str, Any]:
    """Return the ClusterRoleBinding that gives the kubelet's user ``system:node:<name>`` the bootstrap ClusterRole
    ``system:node`` (plugin/pkg/auth/authorizer/rbac/bootstrappolicy: what a kubelet reads and writes), since the
    sandbox's apiserver authorizes with RBAC only."""
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": f"kueue-cohorts:{NODE_NAME}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": f"system:node:{NODE_NAME}"}]}


def extended_capacity(capacity: Mapping[str, Any]) -> dict[str, str]:
    """Return the extended resources of a node pool's ``capacity`` (names with a domain, e.g. ``nvidia.com/gpu``,
    ``nvidia.com/gpumem``), as strings, the ones the kubelet does not discover itself."""
    return {name: str(value) for name, value in capacity.items() if "/" in name}


def capacity_patch(resources: Mapping[str, str]) -> list[dict[str, Any]]:
    """Return the JSON patch of a Node's status that advertises ``resources`` (name -> quantity): one ``add`` of
    ``/status/capacity/<name>`` each, the name's ``/`` escaped as ``~1`` (RFC 6901), as in the Kubernetes task
    "Advertise Extended Resources for a Node"."""
    return [{"op": "add", "path": f"/status/capacity/{name.replace('~', '~0').replace('/', '~1')}", "value": value}
            for name, value in sorted(resources.items())]


# ----- images ---------------------------------------------------------------------------------------------------


def _tar_bytes(entries: Sequence[tarfile.TarInfo], data: Mapping[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info in entries:
            payload = data.get(info.name)
            tar.addfile(info, io.BytesIO(payload) if payload is not None else None)
    return buf.getvalue()


def _entry(name: str, kind: bytes, mode: int, *, size: int = 0, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.linkname, info.mtime = kind, mode, size, link, 0
    return info


def skeleton_layer(files: Mapping[str, tuple[bytes, int]] = {}) -> bytes:  # noqa: B006 - read only
    """Return an uncompressed layer tar of a minimal root: ``bin``, ``lib``, ``lib64``, ``sbin`` as symlinks into
    ``usr`` (the merged-/usr layout, so the host's /usr mounted there brings them), the directories ``usr``, ``etc``,
    ``tmp`` (1777), ``workspace`` (1777, the runtime's working dir), ``proc``, ``sys``, ``dev``, ``run``, plus
    ``files`` (path -> (content, mode))."""
    entries = [_entry(d, tarfile.DIRTYPE, 0o755) for d in ("usr", "etc", "proc", "sys", "dev", "run", "var")]
    entries += [_entry(d, tarfile.DIRTYPE, 0o1777) for d in ("tmp", "workspace")]
    entries += [_entry(n, tarfile.SYMTYPE, 0o777, link=f"usr/{n}") for n in ("bin", "lib", "lib64", "sbin")]
    entries += [_entry(path, tarfile.REGTYPE, mode, size=len(content)) for path, (content, mode) in files.items()]
    return _tar_bytes(entries, {path: content for path, (content, _) in files.items()})


def oci_layout_tar(name: str, layer: bytes, config: Mapping[str, Any]) -> bytes:
    """Return an OCI image layout (image-spec v1.1 ``oci-layout``, ``index.json``, ``blobs/sha256/``) as a tar with
    one image: the uncompressed ``layer`` and the image config ``config`` (``Entrypoint``, ``Env``, ``User`` ...),
    for linux/amd64, named ``name`` by the ``io.containerd.image.name`` annotation that ``ctr images import``
    reads (and ``org.opencontainers.image.ref.name``, the tag)."""
    def blob(data: bytes) -> tuple[str, bytes]:
        return "sha256:" + hashlib.sha256(data).hexdigest(), data

    layer_digest, _ = blob(layer)
    image_config = json.dumps({"architecture": "amd64", "os": "linux", "config": dict(config),
                               "rootfs": {"type": "layers", "diff_ids": [layer_digest]}}, sort_keys=True).encode()
    config_digest, _ = blob(image_config)
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest,
                   "size": len(image_config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer_digest,
                    "size": len(layer)}],
    }, sort_keys=True).encode()
    manifest_digest, _ = blob(manifest)
    index = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifest_digest, "size": len(manifest),
        "platform": {"architecture": "amd64", "os": "linux"},
        "annotations": {"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]},
    }]}, sort_keys=True).encode()
    files = {"oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(), "index.json": index}
    for data in (layer, image_config, manifest):
        files[f"blobs/sha256/{hashlib.sha256(data).hexdigest()}"] = data
    entries = [_entry(d, tarfile.DIRTYPE, 0o755) for d in ("blobs", "blobs/sha256")]
    entries += [_entry(path, tarfile.REGTYPE, 0o644, size=len(data)) for path, data in files.items()]
    return _tar_bytes(entries, files)


def pause_image(pause: Path) -> bytes:
    """Return the OCI layout tar of :data:`PAUSE_IMAGE`: ``/pause`` (the built ``pause``) as entrypoint, user
    :data:`PAUSE_USER`, as upstream's build/pause/Dockerfile."""
    layer = skeleton_layer({"pause": (pause.read_bytes(), 0o755)})
    return oci_layout_tar(PAUSE_IMAGE, layer, {"Entrypoint": ["/pause"], "User": f"{PAUSE_USER}:{PAUSE_USER}"})


def host_python_image(venv: Path) -> bytes:
    """Return the OCI layout tar of :data:`HOST_PYTHON_IMAGE`: the skeleton root, ``PATH`` starting at ``venv``'s
    ``bin`` (its ``python`` is the host interpreter, mounted with the venv by the base spec), working dir
    ``/workspace``, no entrypoint (the pod gives its command)."""
    path = f"{venv.resolve() / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    return oci_layout_tar(HOST_PYTHON_IMAGE, skeleton_layer(),
                          {"Env": [f"PATH={path}"], "WorkingDir": "/workspace"})


# ----- teardown -------------------------------------------------------------------------------------------------


def mounts_below(root: Path, mountinfo: str | None = None) -> list[Path]:
    """Return the mount points at or below ``root`` in ``/proc/self/mountinfo`` (``mountinfo``: its text, for
    tests), deepest first (the order to unmount them in). Octal escapes of the kernel (``\\040`` for a space) are
    decoded."""
    text = mountinfo if mountinfo is not None else Path("/proc/self/mountinfo").read_text()
    prefix = str(root).rstrip("/")
    found = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 5:
            continue
        point = fields[4].encode().decode("unicode_escape")
        if point == prefix or point.startswith(prefix + "/"):
            found.append(Path(point))
    return sorted(set(found), key=lambda p: (-len(p.parts), str(p)))


def prepare_cgroup_root(cgroup_root: Path = Path("/sys/fs/cgroup"), below: str = CGROUP_ROOT) -> list[Path]:
    """Create the kubelet's ``cgroupRoot`` ``below`` in every cgroup hierarchy mounted under ``cgroup_root`` (the
    kubelet refuses a cgroupRoot with a missing path: "cgroup [...] has some missing paths"); on cgroup v1 a new
    cpuset cgroup starts with no CPUs and memory nodes, so they are copied from its parent. Return the
    directories."""
    made = []
    for hierarchy in [cgroup_root, *cgroup_root.iterdir()] if cgroup_root.is_dir() else []:
        if not (hierarchy / "cgroup.procs").exists():
            continue
        top = hierarchy / below.strip("/")
        top.mkdir(exist_ok=True)
        for name in ("cpuset.cpus", "cpuset.mems"):
            if (top / name).exists() and not (top / name).read_text().strip():
                (top / name).write_text((hierarchy / name).read_text())
        made.append(top)
    return made


def cgroup_pids(cgroup_root: Path = Path("/sys/fs/cgroup"), below: str = CGROUP_ROOT) -> set[int]:
    """Return every pid in any cgroup below ``below`` of any hierarchy mounted under ``cgroup_root`` (v1 and v2)."""
    pids: set[int] = set()
    for hierarchy in [cgroup_root, *cgroup_root.iterdir()] if cgroup_root.is_dir() else []:
        top = hierarchy / below.strip("/")
        if not top.is_dir():
            continue
        for procs in top.rglob("cgroup.procs"):
            try:
                pids.update(int(p) for p in procs.read_text().split())
            except OSError:
                continue
    return pids


def remove_cgroups(cgroup_root: Path = Path("/sys/fs/cgroup"), below: str = CGROUP_ROOT) -> None:
    """Remove the (now empty) cgroups below ``below`` in every hierarchy, children first; busy ones stay."""
    for hierarchy in [cgroup_root, *cgroup_root.iterdir()] if cgroup_root.is_dir() else []:
        top = hierarchy / below.strip("/")
        if not top.is_dir():
            continue
        for directory in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)) + [top]:
            try:
                directory.rmdir()
            except OSError:
                pass


def shim_pids(socket: Path) -> set[int]:
    """Return the pids of the containerd shims serving the containerd at ``socket`` (their argv names it after
    ``-address``): they are detached from containerd's process group and outlive it."""
    found = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"containerd-shim-runc-v2") and str(socket).encode() in argv:
            found.add(int(proc.name))
    return found


SHIM_SOCKETS = Path("/run/containerd/s")
"""Where every containerd shim puts its socket (containerd v2.4.2 pkg/shim ``socketRoot`` + ``s``, built in)."""
DEVICE_PLUGINS = Path("/var/lib/kubelet/device-plugins")
"""The kubelet's device-plugin socket directory, whatever its ``--root-dir`` (k8s.io/kubelet
pkg/apis/deviceplugin/v1beta1 ``DevicePluginPath``, a constant)."""
CONTAINER_LOG_LINKS = Path("/var/log/containers")
"""Where the kubelet links every container's log (pkg/kubelet/kuberuntime ``ContainerLogsDir``, a constant)."""


def remove_log_links(pod_logs: Path, directory: Path = CONTAINER_LOG_LINKS) -> list[Path]:
    """Remove the symbolic links in ``directory`` that point below ``pod_logs`` (this node's containers' logs),
    then ``directory`` if it is left empty; return the links removed."""
    removed = []
    for link in sorted(directory.iterdir()) if directory.is_dir() else []:
        if link.is_symlink() and Path(os.readlink(link)).is_relative_to(pod_logs):
            link.unlink()
            removed.append(link)
    try:
        directory.rmdir()
    except OSError:
        pass
    return removed


def remove_stale_sockets(directory: Path = SHIM_SOCKETS) -> list[Path]:
    """Remove the Unix sockets in ``directory`` that nothing listens on any more (a connect is refused: the shims
    were killed, so they could not remove theirs), then the directory and its parent if they are empty; sockets of
    live shims (any containerd's) stay. Return the sockets removed."""
    removed = []
    for path in sorted(directory.iterdir()) if directory.is_dir() else []:
        if not path.is_socket():
            continue
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(str(path))
            except ConnectionRefusedError:
                path.unlink(missing_ok=True)
                removed.append(path)
            except OSError:
                continue
    for empty in (directory, directory.parent):
        try:
            empty.rmdir()
        except OSError:
            break
    return removed


def kill_all(pids: Iterable[int]) -> None:
    """SIGKILL every pid of ``pids`` that still exists."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def cleanup(paths: RealNodePaths, wait: float = 10.0) -> list[str]:
    """Remove what the real node leaves behind once its kubelet and containerd are stopped: the containers'
    processes (every pid below :data:`CGROUP_ROOT`) and the shims of its containerd (SIGKILL), every mount below
    ``paths.root`` (rootfs overlays, network namespaces, volumes; lazily, deepest first), the pod cgroups and the
    bridge :data:`BRIDGE`, the shims' and the kubelet's stale sockets (:func:`remove_stale_sockets`, also
    :data:`DEVICE_PLUGINS`) and the kubelet's log links to this node (:func:`remove_log_links`). Return what was
    done, one line each; nothing when nothing was left."""
    done = []
    killed: set[int] = set()
    for _ in range(int(wait / 0.2)):
        victims = cgroup_pids() | shim_pids(paths.socket)
        if not victims:
            break
        kill_all(victims)
        killed |= victims
        time.sleep(0.2)
    if killed:
        done.append(f"killed {len(killed)} container and shim processes")
    for point in mounts_below(paths.root):
        subprocess.run(["umount", "-l", str(point)], capture_output=True)
        done.append(f"unmounted {point}")
    remove_cgroups()
    if stale := remove_stale_sockets():
        done.append(f"removed {len(stale)} stale shim sockets from {SHIM_SOCKETS}")
    if stale := remove_stale_sockets(DEVICE_PLUGINS):
        done.append(f"removed the kubelet's stale sockets from {DEVICE_PLUGINS}")
    if links := remove_log_links(paths.pod_logs):
        done.append(f"removed {len(links)} log links from {CONTAINER_LOG_LINKS}")
    if Path(f"/sys/class/net/{BRIDGE}").exists():
        subprocess.run(["ip", "link", "delete", BRIDGE], capture_output=True)
        done.append(f"deleted the bridge {BRIDGE}")
    return done
