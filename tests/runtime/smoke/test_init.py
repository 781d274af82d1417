"""`cudalint smoke --init` writes a target from a reading of the project: on the demo (a model
module, a config file, a training script) and on a script that trains as it is imported, the
written target runs as it is, every guess under a `# GUESS: confirm` line; a guess with nothing
to go on, or an input that does not fit, stops the run naming the line to edit."""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cudalint.runtime.smoke.command import main

from .helpers import check, subprocess_env

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"


def _copy(name: str, tmp_path: Path) -> Path:
    project = tmp_path / name
    shutil.copytree(FIXTURES / name, project,
                    ignore=shutil.ignore_patterns("__pycache__", "smoke_target.py", "*.pt"))
    return project


def _init(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["--init", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _guessed(text: str, code: str) -> bool:
    """`code` is a line of the target, under a `# GUESS: confirm` comment."""
    lines = text.splitlines()
    index = next(i for i, line in enumerate(lines) if line.strip() == code)
    return lines[index - 1].strip().startswith("# GUESS: confirm")


def test_the_demos_target_runs_and_marks_its_guesses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        smoke: Callable[..., tuple[int, dict | None, str, str]]) -> None:
    demo = _copy("demo", tmp_path)
    written = demo / "smoke_target.py"
    code, out, err = _init(capsys, str(written))
    assert (code, err) == (0, ""), err
    assert out.startswith(f"wrote {written} from ResidualMLP (model.py:21), AdamW (train.py:45)"
                          ", CrossEntropyLoss (train.py:57): 9 guess(es)")
    text = written.read_text()
    assert "from model import ResidualMLP  # model.py:21" in text
    # The constructor's arguments, from config.yaml; the input from the first layer.
    for line, source in [("in_features=32,", "config.yaml:3: `in_features: 32`"),
                         ("classes=10,", "config.yaml:6: `classes: 10`")]:
        assert _guessed(text, line) and f"# GUESS: confirm {source}" in text
    assert _guessed(text, "return torch.randn(batch_size, 32)")
    assert _guessed(text, "optimizer = torch.optim.AdamW(model.parameters(), lr=0.001)")
    # The loss as train.py computes it: its criterion called on the model's output.
    assert ("# GUESS: confirm the loss as train.py:57 computes it: `loss = loss_fn(model("
            "features), labels)`\n    output = _main_output(_run(model, inputs))\n    return "
            "nn.CrossEntropyLoss()(output, targets)\n") in text
    assert "train.py:71: `torch.save(" in text  # the project's own checkpoint save

    code, report, _, err = smoke(f"{written}:train_step")
    assert code == 0 and report is not None, err
    assert check(report, "run")["status"] == "pass"
    assert _trains(report, "ResidualMLP")
    assert check(report, "checkpoint")["status"] == "pass"
    assert check(report, "run")["detail"].startswith("train_step(cpu) returned 23 output(s)")
    code, report, _, err = smoke(f"{written}:train_steps", "--interrupt", "1")
    assert code == 0 and check(report, "interrupted")["status"] == "pass", err


def test_a_script_that_trains_at_import_is_read_not_imported(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        smoke: Callable[..., tuple[int, dict | None, str, str]]) -> None:
    project = _copy("script_style", tmp_path)
    written = project / "smoke_target.py"
    code, out, _ = _init(capsys, str(written))
    assert code == 0 and "ConvNet (train.py:14), SGD (train.py:30)" in out
    text = written.read_text()
    # train.py makes tensors on "cuda" as it is imported: the target copies the class instead.
    assert "from train import" not in text and "class ConvNet(nn.Module):" in text
    assert "device = torch.device(\"cuda\")" not in text
    assert _guessed(text, "channels=1,")  # ConvNet(1, HIDDEN) at train.py:29
    assert "# GUESS: confirm train.py:8: `HIDDEN = 64`" in text and _guessed(text, "hidden=64,")
    assert _guessed(text, "return torch.randn(batch_size, 1, 32, 32)")  # Conv2d(channels, ...)
    assert _guessed(text, "optimizer = torch.optim.SGD(model.parameters(), lr=0.05, "
                          "momentum=0.9)")
    assert "    return nn.CrossEntropyLoss()(output, targets)\n" in text
    code, report, _, err = smoke(f"{written}:train_step")
    assert code == 0 and report is not None and report["verdict"] == "pass", err
    assert _trains(report, "ConvNet")
    code, report, _, err = smoke(f"{written}:forward")
    assert code == 0 and report is not None and report["verdict"] == "pass", err


def test_a_gpt_script_trains_with_the_loss_its_model_returns(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        smoke: Callable[..., tuple[int, dict | None, str, str]]) -> None:
    """(B, T, V) logits in training, (B, 1, V) in generation: the loss is the one forward
    returns from model(x, y), never one made up from an output's shape (one class: 0)."""
    project = _copy("gpt_script", tmp_path)
    written = project / "smoke_target.py"
    assert _init(capsys, str(written))[0] == 0
    text = written.read_text()
    assert "from train import" not in text and "class GPT(nn.Module):" in text
    assert _guessed(text, "return _run(model, inputs, targets)[1]")
    assert ("# GUESS: confirm the loss GPT returns from forward(..., targets) (train.py:58: "
            "`return logits, loss`)") in text
    assert _guessed(text, "return inputs.roll(-1, dims=-1)")  # the next token
    assert _guessed(text, "optimizer = torch.optim.AdamW(model.parameters(), lr=0.0003)")
    code, report, _, err = smoke(f"{written}:train_step")
    assert code == 0 and report is not None and report["verdict"] == "pass", err
    assert _trains(report, "GPT")


def _trains(report: dict, model: str) -> bool:
    """The training check passed: four steps of the model, the loss down at each."""
    training = check(report, "training")
    losses = report["training"]["losses"]
    assert training["status"] == "pass", training
    assert training["detail"].startswith("4 ") and f" of {model}: loss " in training["detail"]
    return all(later < earlier for earlier, later in itertools.pairwise(losses))


def _project(tmp_path: Path, model_source: str) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (tmp_path / "net.py").write_text("import torch\nfrom torch import nn\n\n\n" + model_source)
    return tmp_path / "smoke_target.py"


def _failed_line(report: dict, written: Path) -> str:
    """The line of the written target that the run's error names."""
    message = report["error"]["message"]
    match = re.search(r"smoke_target\.py:(\d+): ", message)
    assert match, message
    return written.read_text().splitlines()[int(match.group(1)) - 1]


def test_an_argument_it_cannot_guess_stops_the_run_at_its_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        smoke: Callable[..., tuple[int, dict | None, str, str]]) -> None:
    written = _project(tmp_path, (
        "class Net(nn.Module):\n"
        "    def __init__(self, config):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(config.width, 2)\n\n"
        "    def forward(self, x):\n"
        "        return self.fc(x)\n"))
    code, out, _ = _init(capsys, str(written))
    assert code == 0 and ", 3 with nothing to go on;" in out  # the argument, the loss, its targets
    code, report, _, _ = smoke(f"{written}:forward")
    assert code == 1 and report is not None
    line = _failed_line(report, written)
    assert line.strip() == "config=_edit(\"give Net's 'config' argument a value\"),"
    assert "edit that line" in report["error"]["message"]


def test_an_input_that_does_not_fit_names_the_line_that_makes_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        smoke: Callable[..., tuple[int, dict | None, str, str]]) -> None:
    written = _project(tmp_path, (
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        width = 50\n"
        "        self.fc = nn.Linear(width, 2)\n\n"
        "    def forward(self, x):\n"
        "        return self.fc(x)\n"))
    assert _init(capsys, str(written))[0] == 0
    code, report, _, _ = smoke(f"{written}:forward")
    assert code == 1 and report is not None
    assert _failed_line(report, written).strip() == "return torch.randn(batch_size, 32)"
    assert "does not fit Net: mat1 and mat2 shapes cannot be multiplied" in (
        report["error"]["message"])


def test_it_refuses_to_overwrite_without_force(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    written = _project(tmp_path, "class Net(nn.Module):\n    pass\n")
    written.write_text("# mine\n")
    code, out, err = _init(capsys, str(written))
    assert (code, out) == (2, "")
    assert err == f"cudalint smoke: error: {written} exists; pass --force to overwrite it\n"
    assert written.read_text() == "# mine\n"
    code, _, err = _init(capsys, str(written), "--force")
    assert code == 0 and "return Net()" in written.read_text(), err


@pytest.mark.parametrize(("argv", "message"), [
    (["--init", "{tmp}/notes.txt"], "{tmp}/notes.txt: the target to write must be a .py file"),
    (["--init", "{tmp}/missing/t.py"], "no such folder: {tmp}/missing"),
    (["--init", "{tmp}/t.py"], "no nn.Module subclass found under {tmp}: write the target by "
                               "hand (docs/smoke.md, 'The target')"),
    ([], "the following arguments are required: TARGET (or --init)"),
])
def test_what_it_cannot_write_is_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
        message: str) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "data.py").write_text("import torch\nX = torch.zeros(3)\n")
    code = main([arg.format(tmp=tmp_path) for arg in argv])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err == f"cudalint smoke: error: {message.format(tmp=tmp_path)}\n"


def test_writing_a_target_does_not_import_torch(tmp_path: Path) -> None:
    written = _project(tmp_path, "class Net(nn.Module):\n    pass\n")
    program = ("import sys\nfrom cudalint.runtime.smoke.command import main\n"
               f"code = main(['--init', {str(written)!r}])\n"
               "print(code, 'torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", program], env=subprocess_env(),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.splitlines()[-1] == "0 False", done.stderr


def test_a_layer_sized_by_a_defaulted_argument_takes_the_default(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        smoke: Callable[..., tuple[int, dict | None, str, str]]) -> None:
    written = _project(tmp_path, (
        "class Encoder(nn.Module):\n"
        "    def __init__(self, vocab: int = 100, width: int = 32) -> None:\n"
        "        super().__init__()\n"
        "        self.embed = nn.Embedding(vocab, width)\n"
        "        self.head = nn.Linear(width, vocab)\n\n"
        "    def forward(self, tokens):\n"
        "        return self.head(self.embed(tokens).mean(dim=1))\n"))
    assert _init(capsys, str(written))[0] == 0
    text = written.read_text()
    assert _guessed(text, "return torch.randint(0, 100, (batch_size, 16))")  # token ids
    assert "return Encoder()" in text  # no argument to guess
    code, report, _, err = smoke(f"{written}:forward")
    assert code == 0 and report is not None and report["verdict"] == "pass", err
    # No loss in the project: the training stops at the line to edit, never trains on a guess.
    code, report, _, err = smoke(f"{written}:train_step")
    assert code == 1 and report is not None
    assert _failed_line(report, written).strip().startswith("return _edit(\"make the targets "
                                                            "of the project's loss (none found")
    assert "return _edit('the loss: none found in the project: compute it as your training " \
           "does')" in text


@pytest.mark.parametrize("name", ["pipe.py", "settings.yaml"])
def test_a_fifo_in_the_project_is_never_opened(tmp_path: Path, name: str) -> None:
    """The project is read as `check` reads it: a FIFO named like a source or a config file
    is passed over, not waited on (a child with a time limit: a wait would block forever)."""
    import os

    project = _copy("demo", tmp_path)
    os.mkfifo(project / name)
    program = ("from cudalint.runtime.smoke.command import main\n"
               f"raise SystemExit(main(['--init', {str(project / 'gen.py')!r}]))\n")
    done = subprocess.run([sys.executable, "-c", program], env=subprocess_env(),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "class ResidualMLP" not in (project / "gen.py").read_text()
    assert "ResidualMLP(" in (project / "gen.py").read_text()


def test_a_loss_call_is_copied_with_its_reshapes(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The project's own call, its output and target renamed; class indices over the last
    dimension, which its reshape makes the classes (never dimension 1 of a (B, T, V) output)."""
    written = _project(tmp_path, (
        "import torch.nn.functional as F\n\n\n"
        "class Tagger(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.embed = nn.Embedding(50, 8)\n\n"
        "    def forward(self, tokens):\n"
        "        return self.embed(tokens)\n\n\n"
        "def step(model, tokens, tags):\n"
        "    logits = model(tokens)\n"
        "    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tags.flatten(),\n"
        "                           label_smoothing=0.1)\n"))
    assert _init(capsys, str(written))[0] == 0
    text = written.read_text()
    assert ("    return nn.functional.cross_entropy(output.reshape(-1, output.shape[-1]), "
            "targets.flatten(), label_smoothing=0.1)\n") in text
    assert _guessed(text, "return torch.randint(0, output.shape[-1], output.shape[:-1])")


def test_it_proposes_the_tolerance_to_declare_until_there_is_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    written = _project(tmp_path, "class Net(nn.Module):\n    pass\n")
    code, out, _ = _init(capsys, str(written))
    proposal = out.split("\n", 1)[1]
    assert code == 0 and proposal.startswith(
        f"no tolerance is declared: decide it before the first run, add it to "
        f"{tmp_path / 'pyproject.toml'} and commit it:\n[tool.cudalint.smoke]\nrtol = 1e-4")
    with (tmp_path / "pyproject.toml").open("a") as pyproject:
        pyproject.write(proposal.split(":\n", 1)[1] + "\n")
    code, out, _ = _init(capsys, str(written), "--force")
    assert code == 0 and "\n" not in out.strip()  # declared: nothing more to propose
