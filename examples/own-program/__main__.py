"""A Pulumi program of your own (an EKS or lab cluster stack, say) that uses kueue-cohorts as a library.

It makes two Namespaces the way your program already would, then hands their names, Outputs of those resources, to
an InferenceTrainingCohort: inference owns the GPU quota, training borrows it while inference is idle, and Kueue
reclaims it for inference. The cohort judges the stack with the same settings check as `kueue-cohorts validate` when
it is constructed, and again once the names resolve (docs/library.md). Kueue itself must run in the cluster already
(`KueueInstallation` installs it; the local sandbox has it).

    pip install -r requirements.txt      # or: pulumi install
    pulumi stack init lab
    pulumi config set renderDir rendered  # no cluster: write the manifests; or set kubeconfig / context
    pulumi preview
"""
import pulumi
import pulumi_kubernetes as k8s

from kueue_cohorts.components.resources import InferenceTrainingCohort, InferenceTrainingCohortArgs

config = pulumi.Config()
render_dir = config.get("renderDir")
if render_dir:
    provider = k8s.Provider("cluster", render_yaml_to_directory=render_dir)
else:
    provider = k8s.Provider("cluster", kubeconfig=config.get("kubeconfig"), context=config.get("context"))
opts = pulumi.ResourceOptions(provider=provider)

# Your own resources: the namespaces your platform team already manages.
serving = k8s.core.v1.Namespace("serving", metadata={"name": "example-serving"}, opts=opts)
training = k8s.core.v1.Namespace("training", metadata={"name": "example-training"}, opts=opts)

# The stack in the shape of a stack file's keys (docs/configuration.md), without the namespaces: the Args bring them.
STACK = {
    "nodePools": [{"name": "gpu", "count": 1, "capacity": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"}}],
    "resourceFlavor": {"name": "example-gpu"},
    "inferenceTraining": {
        "cohort": "example-shared",
        "namespacePolicy": "Label",  # the namespaces are yours: the cohort only adds its selector label to them
        "inference": {
            "clusterQueue": "example-inference-cq",
            "localQueue": "inference",
            "nominalQuota": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"},
            "priorityClass": {"name": "example-inference-prio", "value": 1000},
        },
        "training": {
            "clusterQueue": "example-training-cq",
            "localQueue": "training",
            "priorityClass": {"name": "example-training-prio", "value": 10},
        },
    },
}

cohort = InferenceTrainingCohort("example", InferenceTrainingCohortArgs(
    stack=STACK,
    inference_namespaces=[serving.metadata.name],  # Outputs of the Namespaces above
    training_namespaces=[training.metadata.name],
), opts)

pulumi.export("cohort", cohort.outputs)  # cohort, clusterQueues, localQueues ("namespace/name"), priority classes
