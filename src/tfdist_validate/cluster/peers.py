"""Which peers of a multi-worker cluster answer on their port: evidence for a failed or hung collective.

Run only after the smoke test failed or hung, to name the worker that could not be reached. It is a plain TCP
connect to each peer's gRPC port (what TensorFlow's collectives connect to), with a short deadline, in
parallel, so it adds about a second whatever the cluster's size.
"""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from tfdist_validate.cluster.tf_config import ClusterConfig, split_address

CONNECT_TIMEOUT_S = 1.0


@dataclass(frozen=True)
class PeerState:
    task: str
    address: str
    problem: str | None  # None: something accepted the connection

    def to_json(self) -> dict[str, str | None]:
        return {"task": self.task, "address": self.address, "problem": self.problem}


def _probe(task: str, address: str, timeout_s: float) -> PeerState:
    host, port = split_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return PeerState(task, address, None)
    except TimeoutError:
        return PeerState(task, address, f"no answer within {timeout_s:g} s")
    except OSError as err:
        return PeerState(task, address, err.strerror or str(err))


def probe_peers(cluster: ClusterConfig, timeout_s: float = CONNECT_TIMEOUT_S) -> list[PeerState]:
    peers = cluster.peers
    if not peers:
        return []
    with ThreadPoolExecutor(max_workers=min(32, len(peers))) as pool:
        return list(pool.map(lambda peer: _probe(peer[0], peer[1], timeout_s), peers))


def unreachable_text(states: list[PeerState]) -> str:
    """'worker:1 at 10.0.0.2:2222 (Connection refused)', or '' when every peer answered."""
    return "; ".join(f"{s.task} at {s.address} ({s.problem})" for s in states if s.problem)
