"""Rollout arms and stickiness."""

from __future__ import annotations

from optimizer.decide.pickers.arms import arm
from optimizer.decide.pickers.sticky import BUCKETS, bucket, within
from optimizer.decide.state.snapshot import PolicyRef, Rollout

ACTIVE = PolicyRef(name="weighted-score", version="builtin", spec="weighted-score")
CANARY = PolicyRef(name="ppo", version="2", spec="/trained/ppo")


def test_a_session_always_lands_on_the_same_arm() -> None:
    rollout = Rollout(active=ACTIVE, canary=CANARY, canary_share=0.5)
    for key in ("alice", "bob", "carol"):
        assert len({arm(rollout, key) for _ in range(5)}) == 1


def test_the_canary_gets_about_its_share_of_sessions() -> None:
    rollout = Rollout(active=ACTIVE, canary=CANARY, canary_share=0.2)
    arms = [arm(rollout, f"session-{i}")[1] for i in range(5000)]
    assert 0.17 < arms.count("canary") / len(arms) < 0.23


def test_without_a_canary_every_decision_is_active() -> None:
    assert arm(Rollout(active=ACTIVE), "anyone") == (ACTIVE, "active")


def test_buckets_are_crc32_not_salted_hash() -> None:
    assert bucket("session-1") == bucket("session-1") < BUCKETS
    assert within("session-1", 1.0) and not within("session-1", 0.0)
