"""A topology's cross-entry checks: duplicates, references to entries that do not exist,
and nodes whose served models do not fit their memory (`Topology`'s validator runs them
after each entry's own fields are checked)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from optimizer.topology_entries import (
    Accelerator,
    Link,
    Model,
    Node,
    Profile,
    Site,
    Slo,
    Source,
    Workload,
    node_kv_capacity_bytes,
)


def _entry_label(section: str, index: int, entry: Any) -> str:
    name = getattr(entry, "name", None)
    if name is None and isinstance(entry, Link):
        name = f"{entry.a}<->{entry.b}"
    if name is None and isinstance(entry, Profile):
        name = f"{entry.model}@{entry.accelerator}"
    return f"{section}[{index}] ({name})" if name else f"{section}[{index}]"


def _duplicates(section: str, keys: Sequence[Any], entries: Sequence[Any]) -> Iterable[str]:
    seen: dict[Any, int] = {}
    for index, (key, entry) in enumerate(zip(keys, entries, strict=True)):
        if key in seen:
            yield (
                f"{_entry_label(section, index, entry)}: duplicate name {key!r} "
                f"(first at {section}[{seen[key]}])"
            )
        else:
            seen[key] = index


class Sections(Protocol):
    """What the checks read of a fleet: its lists (a `Topology` has them)."""

    @property
    def sites(self) -> tuple[Site, ...]: ...
    @property
    def links(self) -> tuple[Link, ...]: ...
    @property
    def accelerators(self) -> tuple[Accelerator, ...]: ...
    @property
    def models(self) -> tuple[Model, ...]: ...
    @property
    def profiles(self) -> tuple[Profile, ...]: ...
    @property
    def nodes(self) -> tuple[Node, ...]: ...
    @property
    def sources(self) -> tuple[Source, ...]: ...
    @property
    def slos(self) -> tuple[Slo, ...]: ...
    @property
    def workload(self) -> Workload | None: ...


def reference_problems(t: Sections) -> Iterable[str]:
    """Every duplicate name or address, unknown reference and impossible node of `t`, each
    labelled with its section, index and name (what `Topology` reports as invalid)."""
    yield from _duplicates("sites", [s.name for s in t.sites], t.sites)
    yield from _duplicates("accelerators", [a.name for a in t.accelerators], t.accelerators)
    yield from _duplicates("models", [m.name for m in t.models], t.models)
    yield from _duplicates("nodes", [n.name for n in t.nodes], t.nodes)
    yield from _duplicates("sources", [s.name for s in t.sources], t.sources)
    yield from _duplicates("slos", [s.name for s in t.slos], t.slos)
    yield from _duplicates("links", [frozenset((lk.a, lk.b)) for lk in t.links], t.links)
    yield from _duplicates("profiles", [(p.model, p.accelerator) for p in t.profiles], t.profiles)
    # One endpoint is one node: a gateway's answer must name a single node.
    first_at: dict[str, int] = {}
    for index, node in enumerate(t.nodes):
        if node.address is None:
            continue
        if node.address in first_at:
            yield (
                f"{_entry_label('nodes', index, node)}: field 'address': duplicate address "
                f"{node.address!r} (first at nodes[{first_at[node.address]}])"
            )
        else:
            first_at[node.address] = index

    sites = {s.name for s in t.sites}
    accelerators = {a.name: a for a in t.accelerators}
    models = {m.name: m for m in t.models}
    slos = {s.name for s in t.slos}
    profiles = {(p.model, p.accelerator) for p in t.profiles}

    def missing(label: str, field: str, kind: str, value: str, known: Iterable[str]) -> str | None:
        return None if value in known else f"{label}: field '{field}': unknown {kind} {value!r}"

    checks: list[str | None] = []
    for i, link in enumerate(t.links):
        label = _entry_label("links", i, link)
        checks += [
            missing(label, "a", "site", link.a, sites),
            missing(label, "b", "site", link.b, sites),
        ]
        if link.a == link.b:
            checks.append(f"{label}: a link joins site {link.a!r} to itself")
    for i, prof in enumerate(t.profiles):
        label = _entry_label("profiles", i, prof)
        checks += [
            missing(label, "model", "model", prof.model, models),
            missing(label, "accelerator", "accelerator", prof.accelerator, accelerators),
        ]
    for i, node in enumerate(t.nodes):
        label = _entry_label("nodes", i, node)
        checks.append(missing(label, "site", "site", node.site, sites))
        checks.append(missing(label, "accelerator", "accelerator", node.accelerator, accelerators))
        node_models_known = True
        for m in node.models:
            problem = missing(label, "models", "model", m, models)
            checks.append(problem)
            node_models_known &= problem is None
            if (
                problem is None
                and node.accelerator in accelerators
                and (m, node.accelerator) not in profiles
            ):
                checks.append(
                    f"{label}: field 'models': no profile for model {m!r} on "
                    f"accelerator {node.accelerator!r}"
                )
        if node_models_known and node.accelerator in accelerators:
            capacity = node_kv_capacity_bytes(node, accelerators, models)
            if capacity <= 0:
                checks.append(
                    f"{label}: field 'models': the served models need "
                    f"{sum(models[m].memory_gib for m in node.models):g} GiB but the node has "
                    f"{node.gpus * accelerators[node.accelerator].memory_gib:g} GiB"
                )
    for i, source in enumerate(t.sources):
        label = _entry_label("sources", i, source)
        checks += [
            missing(label, "site", "site", source.site, sites),
            missing(label, "slo", "slo", source.slo, slos),
        ]
    if t.workload is not None:
        for i, share in enumerate(t.workload.models):
            checks.append(missing(f"workload.models[{i}]", "name", "model", share.name, models))
    yield from (c for c in checks if c is not None)
