"""Who is calling: static tokens of agents, approvers, subscribers and workers, JWTs checked
against identity providers (keys and JWKS), OAuth protected-resource metadata and the step-up
challenges of per-tool scopes."""
