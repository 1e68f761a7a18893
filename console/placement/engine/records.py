"""What the recorder keeps of a placed decision: its record row and its live event."""

from __future__ import annotations

from typing import Any

from console.placement.engine.core import Decision
from console.placement.engine.receipts import receipt_of
from console.placement.engine.writer import utcnow


def record_row(d: Decision) -> dict[str, Any]:
    """The decision record's columns (`writer.RECORD_COLUMNS`), written by the recorder."""
    r = d.request
    shadow = d.shadow or {}
    return {
        "id": d.decision_id,
        "created_at": utcnow(),
        "source": r.source or "",
        "source_site": r.source_site,
        "model": r.model,
        "slo": r.slo or "",
        "prompt_tokens": r.prompt_tokens,
        "max_output_tokens": r.max_output_tokens,
        "session_id": d.session_id or "",
        "decided_by": d.caller,
        "node": d.node,
        "node_site": d.site,
        "fallbacks": d.fallbacks,
        "prefill_node": d.prefill_node or "",
        "prefix_hashes": list(r.prefix_hashes),
        "policy_name": d.policy.name,
        "policy_version": d.policy.version,
        "arm": d.arm,
        "degraded": d.degraded,
        "shadow_policy": shadow.get("policy", ""),
        "shadow_node": shadow.get("node", ""),
        "latency_us": d.latency_us,
        "receipt": receipt_of(d),
        "probe": d.probe["id"] if d.probe is not None else None,
    }


def live_event(d: Decision) -> dict[str, Any]:
    """The live stream's `decision` event (docs/dashboard.md), built only when sampled."""
    return {
        "decision_id": d.decision_id,
        "node": d.node,
        "site": d.site,
        "model": d.request.model,
        "slo": d.request.slo,
        "policy": d.policy.key,
        "fallbacks": d.fallbacks,
        # Null unless split (issue #30) / probed (issue #26): every event has both keys, so the
        # dashboard tells an ordinary decision from one of an older server (key absent).
        "prefill_node": d.prefill_node,
        "probe": d.probe["id"] if d.probe is not None else None,
        "latency_us": round(d.latency_us, 1),
        "ts": utcnow().isoformat(),
        "arm": d.arm,
        "source": d.request.source,
        "source_site": d.request.source_site,
    }
