import io

from deckhouse_gpu.cmd.simulator import main


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def table_names(section: str) -> set[str]:
    lines = section.split("$ kubectl get pgpu\n", 1)[1].splitlines()
    names = set()
    for line in lines[1:]:
        if not line or line.startswith(("(", "Step", "$")):
            break
        names.add(line.split()[0])
    return names


def test_default_scenario_shows_inventory_and_every_step():
    code, out = run()
    assert code == 0
    sections = out.split("\nStep ")
    initial = table_names(sections[0])
    assert len(initial) == 15
    assert "gpu-h100-hgx-0000-db-00-0" in initial
    assert not any(name.startswith("cpu-only") for name in initial)
    assert "gpu-a30-1-0000-31-00-0" not in table_names(sections[1])
    assert "PhysicalGPUDeleted: GPU 0000:31:00.0 left node gpu-a30-1" in sections[1]
    assert "gpu-l40s-0000-e1-00-0" in table_names(sections[2])
    assert "PhysicalGPUDriverChanged" in sections[3]
    assert "gpu-h100-hgx-0000-18-00-0" in table_names(sections[4])
    final = table_names(sections[5])
    assert not any(name.startswith("vm-t4") for name in final)
    assert len(final) == 14
    assert "kind: PhysicalGPU" in sections[5]


def test_wide_output_and_a_small_scenario():
    code, out = run("--scenario", "single-a30", "-o", "wide")
    assert code == 0
    header, row = out.split("$ kubectl get pgpu -o wide\n", 1)[1].splitlines()[:2]
    assert header.split()[-4:] == ["ADDRESS", "DRIVER", "PRODUCT", "UUID"]
    assert row.split()[0] == "worker-1-0000-17-00-0"
    assert "0000:17:00.0" in row
    assert "Nvidia" in row


def test_unknown_scenario_is_an_error(capsys):
    code, out = run("--scenario", "does-not-exist")
    assert code == 2
    assert out == ""
    assert "mixed-cluster" in capsys.readouterr().err
