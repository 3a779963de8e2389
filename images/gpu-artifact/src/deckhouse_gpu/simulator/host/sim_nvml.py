# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A simulated NVML: the ``NVML`` port for cards described by the per-model data files.

Failures are injected the way real NVML fails: a missing library or unloaded driver breaks every
call, a lost GPU breaks its own queries, and a query a card does not support is an absent value,
not an error. All state sits behind one lock, since handlers poll from their own threads.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from deckhouse_gpu.domain.inventory.nvml_snapshot import DeviceSnapshot, DriverInfo
from deckhouse_gpu.domain.inventory.pci import is_pci_address
from deckhouse_gpu.domain.prepare.mig_instance import MigInstance
from deckhouse_gpu.ports.nvml import NVMLDeviceNotFound, NVMLQueryFailed, NVMLUnavailable
from deckhouse_gpu.simulator.host.nvml_data import ModelData, known_models, load_model
from deckhouse_gpu.simulator.host.sim_xid import SimXidEvents, SimXidSubscription

DEFAULT_DRIVER = "580.82.07"
DEFAULT_CUDA = "13.0"
SIM_PID = 4242  # the process a card is busy with when no PID is given
LIBRARY_MISSING = "libnvidia-ml.so.1: cannot open shared object file: No such file or directory"


class Query:
    """The NVML calls a failure can be injected into, named as the real adapter reports them."""

    NAME = "nvmlDeviceGetName"
    UUID = "nvmlDeviceGetUUID"
    MEMORY = "nvmlDeviceGetMemoryInfo"
    CAPABILITY = "nvmlDeviceGetCudaComputeCapability"
    ARCHITECTURE = "nvmlDeviceGetArchitecture"
    BOARD_PART = "nvmlDeviceGetBoardPartNumber"
    POWER_RANGE = "nvmlDeviceGetPowerManagementLimitConstraints"
    POWER_LIMIT = "nvmlDeviceGetPowerManagementLimit"
    ENFORCED_POWER = "nvmlDeviceGetEnforcedPowerLimit"
    MIG_MODE = "nvmlDeviceGetMigMode"
    MIG_PROFILES = "nvmlDeviceGetGpuInstanceProfileInfo"


ALL_QUERIES: tuple[str, ...] = tuple(value for key, value in vars(Query).items() if key.isupper())
# Every card answers these, so their failure is always an error; the others a card may answer
# NOT_SUPPORTED, and the snapshot then carries None (or no profiles).
REQUIRED_QUERIES = (Query.NAME, Query.UUID, Query.MEMORY, Query.CAPABILITY)
OPTIONAL_QUERIES = tuple(query for query in ALL_QUERIES if query not in REQUIRED_QUERIES)
_UUID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://deckhouse.io/modules/gpu/simulated-nvml")
T = TypeVar("T")


class SimNVMLConfigError(ValueError):
    """The simulated cards were described wrongly (unknown model, bad address, MIG on a non-MIG card)."""


@dataclass(frozen=True)
class SimCard:
    model: str
    uuid: str | None = None  # None: derived from the node name and the address
    mig_current: bool = False
    mig_pending: bool | None = None  # None: same as mig_current


@dataclass
class CardState:
    """One simulated card's mutable state; SimulatedMig changes its MIG part under the same lock."""

    model: ModelData
    uuid: str
    mig_current: bool
    mig_pending: bool
    busy: bool = False  # processes run on the card
    pids: tuple[int, ...] = ()  # theirs, as nvmlDeviceGetComputeRunningProcesses lists them
    mig_instances: list[MigInstance] = field(default_factory=list)
    mig_created: int = 0  # instances ever created here, so a re-created one gets a new MIG UUID


def simulated_uuid(node_name: str, address: str) -> str:
    """Stable per node and slot, so a restarted simulator reports the same cards."""
    return f"GPU-{uuid.uuid5(_UUID_NAMESPACE, f'{node_name}/{address}')}"


class SimulatedNVML:
    def __init__(
        self,
        cards: Mapping[str, str | SimCard],
        *,
        node_name: str = "sim-node",
        driver_version: str = DEFAULT_DRIVER,
        cuda_version: str | None = DEFAULT_CUDA,
    ) -> None:
        self.node_name = node_name
        self._lock = threading.Lock()
        self._driver = DriverInfo(driver_version, cuda_version)
        self._cards: dict[str, CardState] = {}
        self._unavailable: str | None = None  # why NVML cannot work at all
        self._device_failures: dict[str, str] = {}
        self._query_failures: dict[tuple[str, str], str | None] = {}  # None: NOT_SUPPORTED
        self.xids = SimXidEvents(self.card_state, self.driver)  # the XidEvents port (sim_xid.py)
        for address, card in cards.items():
            self.add_card(address, card)

    def driver(self) -> DriverInfo:
        with self._lock:
            self._check_library()
            return self._driver

    def device_addresses(self) -> list[str]:
        with self._lock:
            self._check_library()
            return sorted(self._cards)

    def snapshot(self, pci_address: str) -> DeviceSnapshot:
        with self.card_state(pci_address) as card:
            return self._snapshot(pci_address.lower(), card)

    def open_xid_events(self, pci_addresses: Sequence[str]) -> SimXidSubscription:
        return self.xids.open_xid_events(pci_addresses)

    def inject_xid(self, address: str, xid: int) -> int:
        """The driver reports Xid ``xid`` on the card; returns how many event sets got it."""
        with self._lock:
            self._card(address)
        return self.xids.inject(address, xid)

    def add_card(self, address: str, card: str | SimCard) -> None:
        spec = SimCard(card) if isinstance(card, str) else card
        address = address.lower()
        if not is_pci_address(address):
            raise SimNVMLConfigError(f"{address!r} is not a PCI address like 0000:17:00.0")
        if spec.model not in known_models():
            raise SimNVMLConfigError(f"unknown model {spec.model!r}; known: {', '.join(known_models())}")
        model = load_model(spec.model)
        pending = spec.mig_current if spec.mig_pending is None else spec.mig_pending
        if model.mig is None and (spec.mig_current or pending):
            raise SimNVMLConfigError(f"{address}: model {spec.model} has no MIG")
        device_uuid = spec.uuid or simulated_uuid(self.node_name, address)
        with self._lock:
            self._cards[address] = CardState(model, device_uuid, spec.mig_current, pending)

    def remove_card(self, address: str) -> None:
        with self._lock:
            self._cards.pop(address.lower(), None)

    def set_driver(self, driver_version: str, cuda_version: str | None) -> None:
        with self._lock:
            self._driver = DriverInfo(driver_version, cuda_version)

    def set_mig_mode(self, address: str, *, current: bool | None = None, pending: bool | None = None) -> None:
        """Sets either mode; NVML itself only sets the pending one, and a GPU reset applies it."""
        with self._lock:
            card = self._card(address)
            if card.model.mig is None:
                raise NVMLQueryFailed(address.lower(), "nvmlDeviceSetMigMode", "Not Supported")
            card.mig_current = card.mig_current if current is None else current
            card.mig_pending = card.mig_pending if pending is None else pending
            if not card.mig_current:
                card.mig_instances.clear()  # no MIG instance exists outside MIG mode

    def reset(self, address: str) -> None:
        """A GPU reset: the pending MIG mode becomes the current one; no MIG instance survives it."""
        with self._lock:
            card = self._card(address)
            card.mig_current = card.mig_pending
            card.mig_instances.clear()

    def set_busy(self, address: str, busy: bool = True, pids: tuple[int, ...] = ()) -> None:
        """Processes run on the card (or no longer do): a MIG mode change then waits for a reset."""
        with self._lock:
            card = self._card(address)
            card.busy, card.pids = busy, (pids or (SIM_PID,)) if busy else ()

    def processes(self, address: str) -> tuple[int, ...]:
        """The PIDs of the processes on the card; fails as snapshot() does."""
        with self.card_state(address) as card:
            return card.pids

    @contextmanager
    def card_state(self, address: str) -> Iterator[CardState]:
        """One card's state under the simulator's lock, for SimulatedMig, which shares it so that
        snapshot() reports the MIG mode it set. Fails as snapshot() does: no library, no such
        card, or a lost one."""
        address = address.lower()
        with self._lock:
            self._check_library()
            if (card := self._cards.get(address)) is None:
                raise NVMLDeviceNotFound(f"{address}: NVML knows no device at this address")
            if (lost := self._device_failures.get(address)) is not None:
                raise NVMLQueryFailed(address, "nvmlDeviceGetHandleByPciBusId", lost)
            yield card

    @contextmanager
    def all_card_states(self) -> Iterator[dict[str, CardState]]:
        """Every card's state by address, under the lock, injected failures ignored: for saving and
        restoring the simulated cards across processes (sim_mig_state), which a lost card must
        not interrupt."""
        with self._lock:
            yield dict(self._cards)

    def fail_library(self, detail: str = LIBRARY_MISSING) -> None:
        """libnvidia-ml cannot be loaded: every call raises NVMLUnavailable."""
        with self._lock:
            self._unavailable = detail

    def fail_init(self, detail: str = "Driver Not Loaded") -> None:
        """nvmlInit fails (driver not loaded, version mismatch): every call raises NVMLUnavailable."""
        with self._lock:
            self._unavailable = f"nvmlInit failed: {detail}"

    def fail_device(self, address: str, detail: str = "GPU is lost") -> None:
        """The card stays enumerated but every query of it raises NVMLQueryFailed."""
        with self._lock:
            self._card(address)
            self._device_failures[address.lower()] = detail

    def fail_query(
        self, address: str, query: str, detail: str = "Unknown Error", *, not_supported: bool = False
    ) -> None:
        """One query of one card fails, or (``not_supported``) answers NOT_SUPPORTED."""
        if query not in ALL_QUERIES:
            raise SimNVMLConfigError(f"unknown query {query!r}; known: {', '.join(ALL_QUERIES)}")
        if not_supported and query in REQUIRED_QUERIES:
            raise SimNVMLConfigError(f"NVML supports {query} on every card; fail it instead")
        with self._lock:
            self._card(address)
            self._query_failures[(address.lower(), query)] = None if not_supported else detail

    def clear_failures(self) -> None:
        with self._lock:
            self._unavailable = None
            self._device_failures.clear()
            self._query_failures.clear()

    # Internals below run with the lock held.
    def _check_library(self) -> None:
        if self._unavailable is not None:
            raise NVMLUnavailable(self._unavailable)

    def _card(self, address: str) -> CardState:
        if (card := self._cards.get(address.lower())) is None:
            raise SimNVMLConfigError(f"no simulated card at {address}")
        return card

    def _required(self, address: str, query: str, value: T) -> T:
        if (detail := self._query_failures.get((address, query))) is not None:
            raise NVMLQueryFailed(address, query, detail)
        return value

    def _read(self, address: str, query: str, value: T) -> T | None:
        if (address, query) not in self._query_failures:
            return value
        return self._required(address, query, None)  # None when NOT_SUPPORTED, else it raises

    def _snapshot(self, address: str, card: CardState) -> DeviceSnapshot:
        model = card.model
        constraints = self._read(address, Query.POWER_RANGE, (model.power.min_w, model.power.max_w))
        mig = model.mig
        mig_mode = self._read(address, Query.MIG_MODE, (card.mig_current, card.mig_pending)) if mig else None
        profiles = self._read(address, Query.MIG_PROFILES, mig.profiles) if mig else None
        return DeviceSnapshot(
            pci_address=address,
            name=self._required(address, Query.NAME, model.name),
            uuid=self._required(address, Query.UUID, card.uuid),
            memory_total_mib=self._required(address, Query.MEMORY, model.memory_total_mib),
            compute_capability=self._required(address, Query.CAPABILITY, model.compute_capability),
            architecture=self._read(address, Query.ARCHITECTURE, model.architecture),
            board_part_number=self._read(address, Query.BOARD_PART, model.board_part_number),
            power_limit_min_w=constraints[0] if constraints else None,
            power_limit_max_w=constraints[1] if constraints else None,
            power_limit_current_w=self._read(address, Query.POWER_LIMIT, model.power.default_w),
            power_limit_enforced_w=self._read(address, Query.ENFORCED_POWER, model.power.default_w),
            mig_supported=mig_mode is not None,
            mig_current_enabled=mig_mode[0] if mig_mode else None,
            mig_pending_enabled=mig_mode[1] if mig_mode else None,
            mig_profiles=profiles if mig_mode and profiles else (),
        )


def from_model_list(
    models: str,
    addresses: Sequence[str],
    *,
    node_name: str = "sim-node",
    driver_version: str = DEFAULT_DRIVER,
    cuda_version: str | None = DEFAULT_CUDA,
) -> SimulatedNVML:
    """Cards for ``"a30,a30,t4"`` matched in order to the given PCI addresses."""
    keys = [key.strip() for key in models.split(",") if key.strip()]
    if len(keys) != len(addresses):
        raise SimNVMLConfigError(f"{len(keys)} models ({models!r}) for {len(addresses)} PCI addresses")
    cards = dict(zip(addresses, keys, strict=True))  # an unknown model fails in add_card, naming the known
    return SimulatedNVML(cards, node_name=node_name, driver_version=driver_version, cuda_version=cuda_version)
