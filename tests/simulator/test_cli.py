# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import io

from deckhouse_gpu.simulator.cli import main


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def table(section: str) -> dict[str, list[str]]:
    """Rows of the first `kubectl get pgpu` table in a section, by object name."""
    lines = section.split("$ kubectl get pgpu\n", 1)[1].splitlines()
    header = lines[0].split()
    rows: dict[str, list[str]] = {}
    for line in lines[1:]:
        if not line or line.startswith(("(", "Step", "$")):
            break
        cells = line.split()
        # MODEL holds spaces; the last five columns and the first two are single words
        rows[cells[0]] = [cells[0], cells[1], " ".join(cells[2:-5]), *cells[-5:]]
    assert header[:2] == ["NAME", "NODE"]
    return rows


def column(rows: dict[str, list[str]], name: str, title: str) -> str:
    titles = ["NAME", "NODE", "MODEL", "MEMORY(MIB)", "MIG", "DRIVERREADY", "HARDWAREHEALTHY", "AGE"]
    return rows[name][titles.index(title)]


def test_default_scenario_shows_inventory_conditions_and_every_step():
    code, out = run()
    assert code == 0
    sections = out.split("\nStep ")
    assert len(sections) == 19
    initial = table(sections[0])
    assert len(initial) == 15
    assert not any(name.startswith("cpu-only") for name in initial)
    a30 = "gpu-a30-1-0000-17-00-0"
    assert column(initial, a30, "MEMORY(MIB)") == "24576"
    assert column(initial, a30, "MIG") == "Disabled"
    assert (column(initial, a30, "DRIVERREADY"), column(initial, a30, "HARDWAREHEALTHY")) == ("True", "True")
    l40s = "gpu-l40s-0000-ca-00-0"
    assert (column(initial, l40s, "DRIVERREADY"), column(initial, l40s, "HARDWAREHEALTHY")) == (
        "False",
        "Unknown",
    )
    assert column(initial, "gpu-a100-80-0000-5e-00-0", "HARDWAREHEALTHY") == "Unknown"  # on vfio-pci
    assert column(initial, "vm-t4-0000-00-05-0", "MIG") == "<none>"

    after_validator = table(sections[1])
    assert (
        column(after_validator, l40s, "DRIVERREADY"),
        column(after_validator, l40s, "HARDWAREHEALTHY"),
    ) == ("True", "True")
    assert "gpu-a30-1-0000-31-00-0" not in table(sections[2])
    assert "PhysicalGPUDeleted: GPU 0000:31:00.0 left node gpu-a30-1" in sections[2]
    assert column(table(sections[3]), "gpu-l40s-0000-e1-00-0", "HARDWAREHEALTHY") == "True"
    assert "PhysicalGPUDriverChanged" in sections[4]
    assert column(table(sections[4]), "gpu-a100-80-0000-5e-00-0", "HARDWAREHEALTHY") == "True"

    lost = "gpu-h100-hgx-0000-2a-00-0"
    assert column(table(sections[5]), lost, "HARDWAREHEALTHY") == "True"  # inside the grace
    after_grace = table(sections[6])
    assert column(after_grace, lost, "HARDWAREHEALTHY") == "Unknown"
    assert column(after_grace, "gpu-h100-hgx-0000-3a-00-0", "HARDWAREHEALTHY") == "True"
    assert "NVMLQueryFailed" in sections[6]
    # What the kubelet's health stream gets, and so what Pods on the card show.
    health = "device health sent to the kubelet (Pods show it): gpu-h100-hgx: "
    health += "gpu-0000-2a-00-0 and 25 MIG devices: "
    assert "device health sent" not in sections[5]  # inside the grace nothing is reported yet
    assert health + "Unhealthy: HardwareHealthy=Unknown (NVMLQueryFailed): 0000:2a:00.0: " in sections[6]
    assert "GPU is lost" in sections[6]
    # Health as device taints: the lost card's devices stay published, tainted, then untainted.
    taint = "ResourceSlices: gpu-h100-hgx card 0000:2a:00.0 "
    assert taint + "tainted gpu.deckhouse.io/unhealthy=GPULost:NoExecute" in sections[6]
    assert "ResourceSlices:" not in sections[5]
    assert column(table(sections[7]), lost, "HARDWAREHEALTHY") == "True"
    assert health + "Healthy" in sections[7]
    assert taint + "untainted" in sections[7]

    sharing_rows = [
        line for line in sections[8].splitlines() if line.startswith("gpu-a100-40-gpu-deckhouse-io")
    ]
    assert [row.split()[-1] for row in sharing_rows] == ["Physical/shared"]  # one shared device, no MIG
    assert "gpu-a30-1-gpu-deckhouse-io-devices-0" in sections[9]  # mig=false: whole cards, no counters
    mig_card = "gpu-h100-hgx-0000-3a-00-0"
    assert "CDI gpu.deckhouse.io/gpu=" in sections[10]
    assert "/dev/nvidia-caps/nvidia-cap" in sections[10]  # MIG caps nodes in the claim's CDI spec
    # KEP-5304: the container reads which devices it got from a file at the kubelet's path.
    metadata = "-> /var/run/kubernetes.io/dra-device-attributes/resourceclaims/train-small/gpu/"
    assert metadata + "gpu.deckhouse.io-metadata.json" in sections[10]
    assert column(table(sections[10]), mig_card, "MIG") == "Enabled"
    assert "prepared gpu-0000-5d-00-0" in sections[11]
    assert "unprepared train-small" in sections[12]
    assert column(table(sections[12]), mig_card, "MIG") == "Disabled"  # switched off again
    assert "gpu-h100-hgx-0000-18-00-0" in table(sections[14])
    final = table(sections[15])
    assert not any(name.startswith("vm-t4") for name in final)
    assert len(final) == 14  # 15 - the unplugged A30 + the hot-plugged L40S - the VM's T4

    # A pod created on a node: gpu-dra-controller allocates its claim, the kubelet prepares it.
    allocated = "gpu-dra-controller allocated claim inference on gpu-h100-hgx: "
    # First fit in packing order: 1g instances from slice 6 down (domain/offers/placement_order.py).
    assert allocated + "gpu-0000-18-00-0-mig-1g-10gb-6, gpu-0000-18-00-0-mig-1g-10gb-5" in sections[16]
    assert "prepared gpu-0000-18-00-0-mig-1g-10gb-6: CDI gpu.deckhouse.io/gpu=" in sections[17]
    assert column(table(sections[17]), "gpu-h100-hgx-0000-18-00-0", "MIG") == "Enabled"
    assert (
        "gpu-dra-controller could not allocate claim too-big: cannot allocate on node gpu-h100-hgx: "
        in (sections[18])
    )
    assert "claim demo/too-big request gpu (wants 9): " in sections[18]
    assert "kind: PhysicalGPU" in sections[18]
    assert "$ kubectl get resourceslices" in sections[0]

    # The demo ends with the plugin's answers on the simulated cluster.
    status = sections[18].split("$ kubectl gpu status\n", 1)[1].split("\n\n$ kubectl gpu capacity\n")[0]
    inference = next(line for line in status.splitlines() if "0000:18:00.0" in line)
    assert inference.split()[:2] == ["gpu-h100-hgx", "0000:18:00.0"]
    assert "   MIG   " in inference
    assert "2x 1g.10gb" in inference
    assert "demo/inference (pod demo/inference)" in inference
    assert len(status.splitlines()) == 1 + 14  # the header and every card of the final table
    capacity = sections[18].split("$ kubectl gpu capacity\n", 1)[1].splitlines()
    # Eight H100s: one whole (train-big) and two with MIG instances are taken.
    # CLASS, GPUCLASS (none: hand-written classes), DEVICES (offered, taken or not), FITS
    row = capacity[1].split()
    assert (row[0], row[1], row[3]) == ("gpu-h100-80gb", "-", "5")
    assert 5 <= int(row[2]) <= 8
    row = capacity[2].split()
    assert (row[0], row[3]) == ("gpu-h100-80gb-mig-1g.10gb", str(5 * 7 + 5 + 5))


def test_wide_output_and_a_small_scenario():
    code, out = run("--scenario", "single-a30", "-o", "wide")
    assert code == 0
    header, row = out.split("$ kubectl get pgpu -o wide\n", 1)[1].splitlines()[:2]
    assert header.split()[-4:] == ["ADDRESS", "DRIVER", "PRODUCT", "UUID"]
    assert row.split()[0] == "worker-1-0000-17-00-0"
    assert "0000:17:00.0" in row
    assert "NVIDIA A30" in row
    assert "GPU-" in row


def test_unknown_scenario_is_an_error(capsys):
    code, out = run("--scenario", "does-not-exist")
    assert code == 2
    assert out == ""
    assert "mixed-cluster" in capsys.readouterr().err
