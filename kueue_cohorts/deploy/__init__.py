"""Running the real Pulumi engine on this project's stacks, offline (see deploy.engine and deploy.settings)."""
