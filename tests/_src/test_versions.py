"""Every results record says which CPU made it, since another CPU rounds the same program differently."""

from decision_bench._src import versions
from decision_bench._src.versions import cpu_signature, environment_info, same_cpu


def test_the_record_names_this_cpu_and_a_record_from_it_is_the_same_cpu():
    record = environment_info()
    assert record["cpu"] == cpu_signature() and record["cpu"]
    assert same_cpu(record) is True
    assert same_cpu({**record, "cpu": record["cpu"] + "; avx512f"}) is False
    assert same_cpu({k: v for k, v in record.items() if k != "cpu"}) is None  # stored before it was recorded


def test_the_signature_has_the_model_numbers_and_vector_extensions_of_cpuinfo(tmp_path, monkeypatch):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n"
        "flags\t\t: fpu sse4_2 avx2 fma avx512f avx512bw ht\n"
        "processor\t: 1\nmodel name\t: other\n"
    )
    real_open = open
    monkeypatch.setattr(versions, "open", lambda path, *a, **k: real_open(cpuinfo if path == "/proc/cpuinfo" else path, *a, **k),
                        raising=False)
    versions.cpu_signature.cache_clear()
    try:
        assert cpu_signature() == "AMD EPYC; cpu family 25 model 17; avx2 avx512bw avx512f fma sse4_2"
    finally:
        versions.cpu_signature.cache_clear()


def test_a_set_stored_on_another_cpu_says_so_and_one_from_this_cpu_or_unrecorded_does_not():
    import dataclasses

    from decision_bench.experiments.baselines import cpu_difference, load_baselines

    stored = load_baselines("paper")
    versions = {k: v for k, v in stored.meta["versions"].items() if k != "cpu"}
    unrecorded = dataclasses.replace(stored, meta={**stored.meta, "versions": versions})
    here = dataclasses.replace(stored, meta={**stored.meta, "versions": {**versions, "cpu": cpu_signature()}})
    other = dataclasses.replace(stored, meta={**stored.meta, "versions": {**versions, "cpu": "Elsewhere; avx512f"}})
    assert cpu_difference(unrecorded) is None and cpu_difference(here) is None
    assert cpu_difference(other) == f"another CPU (Elsewhere; avx512f; this one: {cpu_signature()})"
