"""The local sandbox: a real control plane on loopback (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kwok with fake GPU nodes from the stack's nodePools), the real Kueue manager and the real JobSet and
Kubeflow Trainer controllers, each with its webhooks on loopback.

Run it as ``python -m kueue_cohorts.sandbox up|down|status|logs``; :func:`sandbox.paths.kubeconfig_path` says where its
kubeconfig
is (the dev stack's provider uses it in sandbox mode). Binaries come from the toolchain (``toolchain.ensure``).
"""
