"""Quotas per owner, enforced by the HTTP API: job types, submissions per second, pending
jobs, live streams (docs/api.md, "Tenants and quotas")."""
