"""The common mistakes end in one line with the working form or the install command, not in Hydra's words.

Each case is what a new user typed (issue 26): the error names what would work, and what it names works.
"""

from __future__ import annotations

import os
import subprocess
import sysconfig
import venv
from collections.abc import Callable
from pathlib import Path

import pytest

import memlab
from memlab.dialogues import load_tau_bench
from memlab.errors import MemlabError


def _error(memlab_cli: Callable[..., int], capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The one `memlab: error:` line of `memlab ARGS`, which must exit with status 2."""
    capsys.readouterr()
    assert memlab_cli(*args) == 2
    err = capsys.readouterr().err
    (line,) = [ln for ln in err.splitlines() if ln.startswith("memlab: error: ")]
    assert "Traceback" not in err
    return line


def test_a_hook_given_as_a_group_choice_names_the_form_that_adds_it(memlab_cli, capsys, tmp_path: Path) -> None:
    line = _error(memlab_cli, capsys, "run", "hooks=summarization", f"output_dir={tmp_path / 'r'}")
    assert "+hooks@hooks.summarization=summarization" in line and "+hooks=summarization" not in line
    assert memlab.compose(["+hooks@hooks.summarization=summarization"]).hooks.summarization.trigger_tokens == 80_000


def test_a_dataset_file_of_another_loader_names_the_loader_that_reads_it(
    memlab_cli, capsys, tau_bench_path: Path, tmp_path: Path
) -> None:
    line = _error(memlab_cli, capsys, "run", "dataset=locomo", f"dataset.path={tau_bench_path}", "debug=default")
    assert f"with dataset=tau_bench dataset.path={tau_bench_path}" in line
    assert 'missing key "sample_id"' not in line
    assert load_tau_bench(tau_bench_path, max_dialogues=1)  # what it names reads the file


def test_a_key_under_a_context_without_strategy_lists_the_keys_and_the_entries_that_have_it(
    memlab_cli, capsys, tmp_path: Path
) -> None:
    line = _error(memlab_cli, capsys, "run", "context=none", "context.strategy.max_tokens=2000", "debug=default")
    assert "context=none (NoneContextConfig), whose keys are max_tokens, keep_first" in line
    assert "|sliding_window have context.strategy.max_tokens (the knob context.max_tokens reaches it)" in line
    assert memlab.compose(["context=sliding_window", "context.strategy.max_tokens=2000"]).context.strategy.max_tokens


@pytest.mark.parametrize(
    ("override", "said"),
    [
        ("context.max_tokens=[1,", "no viable alternative at input '[1,'"),
        (
            "name=h\u00e9llo",
            "a value with characters outside ASCII is quoted, inside the shell's quotes: \"key='value'\"",
        ),
        ("name=runs/x_context=trim", "memlab: error: name=runs/x_context=trim: mismatched input '=' expecting <EOF>"),
        ("name=runs/x_context=trim", "(a value holding '=' is quoted, inside the shell's quotes: \"key='value'\")"),
    ],
)
def test_an_override_hydra_cannot_parse_is_one_line(memlab_cli, capsys, tmp_path: Path, override, said) -> None:
    line = _error(memlab_cli, capsys, "run", override, "debug=default", f"output_dir={tmp_path / 'r'}")
    assert said in line and "override_grammar" in line
    assert not (tmp_path / "r").exists()
    assert memlab.compose(["name='h\u00e9llo'"]).name == "h\u00e9llo"  # quoted, as the line says


def test_the_python_api_explains_a_wrong_key_as_the_command_line_does(memlab_cli, capsys) -> None:
    with pytest.raises(MemlabError) as raised:
        memlab.compose(["context.max_token=2000"])
    assert "did you mean context.max_tokens?" in str(raised.value)
    assert "+context.max_token" not in str(raised.value)  # Hydra's advice, which the key check then refuses
    assert _error(memlab_cli, capsys, "run", "context.max_token=2000") == f"memlab: error: {raised.value}"


def _env_without_optuna(folder: Path) -> Path:
    """A virtualenv with every package of this one but the optuna extra (hydra-optuna-sweeper and optuna).

    Its site-packages links to this environment's entries one by one (memlab's editable install too),
    so it is the same installation minus the extra, built in a second.
    """
    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    python = folder / "bin" / "python"
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    target = Path(subprocess.check_output([python, "-c", where], text=True).strip())
    ours = Path(sysconfig.get_paths()["purelib"])
    left_out = ("optuna", "hydra_optuna_sweeper", "hydra_plugins")
    for entry in ours.iterdir():
        if not entry.name.split("-")[0].startswith(left_out) and not (target / entry.name).exists():
            (target / entry.name).symlink_to(entry)
    (target / "hydra_plugins").mkdir()
    for plugin in (ours / "hydra_plugins").iterdir():
        if plugin.name != "hydra_optuna_sweeper":
            (target / "hydra_plugins" / plugin.name).symlink_to(plugin)
    return python


def test_a_search_without_the_optuna_extra_names_the_install_command(tmp_path: Path) -> None:
    python = _env_without_optuna(tmp_path / "env")
    env = {**os.environ, "HYDRA_FULL_ERROR": "1"}
    no_plugin = subprocess.run([python, "-c", "import hydra_plugins.hydra_optuna_sweeper"], capture_output=True)
    assert no_plugin.returncode != 0, "the extra is really missing there"
    for args in (["context=sliding_window", "hparams_search=window_budget"], ["experiment=optuna_window"]):
        done = subprocess.run(
            [python, "-m", "memlab", "run", *args], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert done.returncode == 2, done.stderr
        (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("memlab: error: ")]
        assert "hydra/sweeper=optuna is not installed" in line and "hparams_search=window_budget" in line, line
        assert line.endswith("pip install 'memlab[optuna]'") and "Could not find" not in line, line
