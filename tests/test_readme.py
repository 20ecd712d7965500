"""The README's Gymnasium example runs as written."""

import re
import runpy
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_gymnasium_example_runs_and_reports_regret(tmp_path, capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    example = next(b for b in blocks if "gym.make(" in b)
    assert len([line for line in example.splitlines() if line.strip()]) <= 14
    script = tmp_path / "example.py"
    script.write_text(example)
    runpy.run_path(str(script))
    printed = capsys.readouterr().out
    regret = float(re.search(r"regret after 100 steps: ([0-9.]+)", printed).group(1))
    assert 0.0 <= regret <= 100.0
