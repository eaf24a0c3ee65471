"""The local sandbox: a real control plane on loopback (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kwok with fake GPU nodes from the stack's nodePools) and the real Kueue manager with its webhooks.

Run it as ``python -m sandbox up|down|status|logs``; :func:`sandbox.paths.kubeconfig_path` says where its kubeconfig
is (the dev stack's provider uses it in sandbox mode). Binaries come from the toolchain (``toolchain.ensure``).
"""
