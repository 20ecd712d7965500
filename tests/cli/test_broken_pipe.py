"""Output piped into a command that stops reading is named as such (issue 34, E11, E12)."""

import errno
import subprocess
import sys

from decision_bench._src.console import os_error_line


def test_a_broken_pipe_names_the_standard_output_not_a_file():
    line = os_error_line(BrokenPipeError(errno.EPIPE, "Broken pipe"))
    assert line.startswith("the standard output was closed") and "a file" not in line


def test_a_closed_pipe_ends_in_one_line_without_a_traceback(tmp_path):
    # `decision-bench ... | head`: the reader is gone before the command prints.
    script = (
        "import sys; from decision_bench import cli; "
        "sys.exit(cli.main(['reproduce', '--estimate', '--preset', 'demo']))"
    )
    reader = subprocess.Popen(["true"], stdin=subprocess.PIPE)
    reader.wait()  # its end of the pipe is closed: every write to it fails with EPIPE
    writer = subprocess.run([sys.executable, "-c", script], stdout=reader.stdin, stderr=subprocess.PIPE,
                            text=True, timeout=120)
    reader.stdin.close()
    assert writer.returncode == 1
    assert "Traceback" not in writer.stderr
    assert writer.stderr.strip().splitlines() == [
        "decision-bench: error: the standard output was closed before the command finished printing (a pipe "
        "such as | head): the rest of its output was not shown; the files it writes are not affected"
    ]
