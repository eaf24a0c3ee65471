"""What-if: replay a demand trace against a stack's Kueue objects, offline, as Kueue 0.19.2 would admit it.

- `whatif.trace`: the demand trace format (JSON Lines, `schema/demand-trace.schema.json`);
- `whatif.synth`: a seeded synthetic trace for a stack's queues (`python -m kueue_cohorts.cohorts trace synth`);
- `whatif.kueue`: the Kueue objects the simulator reads, and what it refuses (Fair Sharing, TAS, admission checks);
- `whatif.quota`, `whatif.cluster`, `whatif.flavors`, `whatif.preemption`, `whatif.scheduler`: the simulator, each
  part a port of the Kueue function it names;
- `whatif.stack`: a stack's Settings -> its Kueue objects (through `components.render`).

Pure: no cluster, no Pulumi. Tools layer: imports the settings and model layers only.
"""
