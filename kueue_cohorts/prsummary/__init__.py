"""The pull-request summary of one stack: policy violations, resource changes, quota tables and cohort diagrams.

`python -m kueue_cohorts.prsummary --stack NAME --base REF [--out FILE]` (what `make pr-summary` and the preview
workflow run)
prints GitHub-flavoured markdown. Pure modules do the rendering (`quotas`, `tables`, `diagram`, `events`,
`document`); `gitbase` reads the stack file at the base ref, `preview` drives the real pulumi CLI offline
(through `deploy.engine`), `baseline` builds the base commit's state in a throwaway file backend.
"""
