"""Access control: roles, API keys for services, and the permission every route checks."""
