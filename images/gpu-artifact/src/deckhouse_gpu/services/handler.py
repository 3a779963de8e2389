"""gpu-handler's loop: capabilities passes on PhysicalGPU changes, per-card retries and a heartbeat.

The heartbeat exists only for silent NVML failures (a card falls off the bus without any API
event); everything else is driven by the watch on this node's PhysicalGPUs (ARCHITECTURE.md D10).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deckhouse_gpu.domain.hardware_health import HealthSettings
from deckhouse_gpu.ports.clock import Clock
from deckhouse_gpu.ports.kube import WatchEvent
from deckhouse_gpu.services.capabilities import CapabilitiesPass
from deckhouse_gpu.services.health import HealthState
from deckhouse_gpu.services.trigger_loop import LoopTiming, PassOutcome, Trigger, TriggerLoop


@dataclass(frozen=True)
class HandlerSettings:
    heartbeat_seconds: float = 60.0
    health: HealthSettings = field(default_factory=HealthSettings)
    timing: LoopTiming = field(
        default_factory=lambda: LoopTiming(
            debounce_seconds=0.1, backoff_initial_seconds=1.0, backoff_max_seconds=60.0
        )
    )


class HandlerLoop(TriggerLoop):
    def __init__(
        self, capabilities: CapabilitiesPass, health: HealthState, clock: Clock, settings: HandlerSettings
    ) -> None:
        super().__init__(self._pass, health, clock, settings.timing)
        self.capabilities = capabilities
        self.settings = settings

    def on_change(self, event: WatchEvent | None) -> None:
        """Watch callback; ignores the events of the handler's own writes."""
        if event is not None:
            version = str(event.object.get("metadata", {}).get("resourceVersion", ""))
            if event.type == "MODIFIED" and version in self.capabilities.written_versions:
                return
            self.notify(Trigger("watch", f"{event.type} {event.object.get('metadata', {}).get('name')}"))
        else:
            self.notify(Trigger("watch", "relisted"))

    def _pass(self, triggers: list[Trigger]) -> PassOutcome:
        report = self.capabilities.run()
        delay = self.settings.heartbeat_seconds
        if report.retry_in is not None:
            delay = min(delay, report.retry_in)
        return PassOutcome(
            ok=report.ok,
            next_delay=delay,
            error="; ".join(report.failures) or None,
            log_fields={
                "healthy": len(report.healthy),
                "gated": len(report.gated),
                "failing": len(report.failing),
                "written": len(report.written),
                "durationSeconds": round(report.seconds, 4),
            },
        )
