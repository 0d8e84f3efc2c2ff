"""Kubernetes manifests of the whole stack, rendered from the code that names things.

``jobstream deploy render --profile dev|production`` (ops/deploy/cli.py) prints them:
the topic names, consumer groups, principals, job types and settings' variable names all
come from the modules that own them, so the manifests cannot drift from the processes
they run (docs/deploy.md, "Kubernetes").
"""
