"""A baselines record that cannot be used is refused in one line naming its file,
before any of its (absent) problems or agents is indexed."""

import json

import pandas as pd
import pytest

from decision_bench._src.files import write_results_csv
from decision_bench.experiments.baselines import FORMAT, load_baselines


def _record(tmp_path, **fields):
    meta = {"format": FORMAT, "agents": {"mlp": {"fingerprint": None}},
            "problems": [{"problem": {"prior": "mlp"}, "seeds": [0]}], **fields}
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(meta))
    # A verified CSV beside it, so only the record itself can be what is refused.
    write_results_csv(path.with_suffix(".csv"), pd.DataFrame({"agent": ["mlp"]}))
    return path


@pytest.mark.parametrize("fields, message", [
    ({"problems": []}, "holds no problems"),
    ({"problems": None}, "holds no problems"),
    ({"agents": {}}, "names no agents"),
    ({"problems": [{"seeds": [0]}]}, "has a malformed problem"),
])
def test_a_record_without_problems_or_agents_is_one_line_naming_the_file(tmp_path, fields, message):
    path = _record(tmp_path, **fields)
    with pytest.raises(ValueError, match=message) as raised:
        load_baselines(path)
    text = str(raised.value)
    assert str(path) in text and len(text.splitlines()) == 1
