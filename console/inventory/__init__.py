"""Fleet inventory: sites, links, accelerators, models, profiles, nodes, sources and SLOs."""
