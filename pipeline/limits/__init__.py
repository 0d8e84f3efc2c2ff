"""Rate limits on firing: per job type, per owner, per (owner, type) (docs/limits.md)."""
