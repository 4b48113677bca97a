"""The nemeses of the chaos suite, by CLI name (``kraftlog chaos run --nemesis ...``)."""

from __future__ import annotations

from chaos.nemesis.base import ActiveFault, Nemesis, NemesisContext, NoTargetError
from chaos.nemesis.clock import ClockSkewNemesis
from chaos.nemesis.coordinator import TxnCoordinatorNemesis
from chaos.nemesis.disk import DiskCorruptionNemesis, FullDiskNemesis
from chaos.nemesis.leadership import LeadershipMoveNemesis
from chaos.nemesis.network import LossyNemesis, PartitionNemesis, SlowNemesis
from chaos.nemesis.process import KillNemesis, PauseNemesis, RollingRestartNemesis

NEMESES: dict[str, type[Nemesis]] = {
    cls.name: cls
    for cls in (
        KillNemesis,
        PauseNemesis,
        PartitionNemesis,
        SlowNemesis,
        LossyNemesis,
        DiskCorruptionNemesis,
        FullDiskNemesis,
        ClockSkewNemesis,
        RollingRestartNemesis,
        LeadershipMoveNemesis,
        TxnCoordinatorNemesis,
    )
}


def parse_nemeses(spec: str) -> list[str]:
    """``"kill,pause"`` -> ``["kill", "pause"]``; ``"all"`` = every nemesis; ``"none"`` or
    ``""`` = none. Unknown names raise ValueError listing the known ones."""
    spec = spec.strip()
    if spec in ("", "none"):
        return []
    if spec == "all":
        return list(NEMESES)
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in NEMESES]
    if unknown:
        raise ValueError(
            f"unknown nemesis {', '.join(unknown)}; known: {', '.join(NEMESES)}, all, none"
        )
    return list(dict.fromkeys(names))


__all__ = [
    "NEMESES",
    "ActiveFault",
    "Nemesis",
    "NemesisContext",
    "NoTargetError",
    "parse_nemeses",
]
