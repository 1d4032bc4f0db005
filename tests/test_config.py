"""YAML configs and CLI input: a wrong field or value is named, with what is allowed, exit code 2."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from forge.cli import app, parse_pairs
from forge.config import TuneSettings, load_config
from forge.errors import ForgeInputError
from forge.testing import run_forge


def write(tmp_path, text):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    return f


def test_config_expands_shapes_into_settings(tmp_path):
    cfg = load_config(write(tmp_path, "op: softmax\nshapes: [{M: 4, N: 8}, {M: 2, N: 2}]\ntrials: 5\nout: r\n"))
    s = cfg.settings()
    assert [x.shape for x in s] == [{"M": 4, "N": 8}, {"M": 2, "N": 2}]
    assert s[0].trials == 5 and str(s[1].out) == "r/shape1"


def test_a_config_reads_an_exponent_without_a_dot_as_a_number(tmp_path):
    """YAML 1.1 reads `1e-5` as a string; forge's files read it as YAML 1.2 does, as on the command line."""
    cfg = load_config(write(tmp_path, "op: rmsnorm\nshapes: [{M: 4, N: 8}]\nattrs: {eps: 1e-5}\ntime_budget: 2E+1\n"))
    (s,) = cfg.settings()
    assert s.attrs["eps"] == 1e-5 and s.time_budget == 20.0
    from forge.ops import get_op

    get_op("rmsnorm").problem(s.shape, s.dtype, s.attrs)          # accepted, not "must be a positive number"


@pytest.mark.parametrize("text,field", [
    ("op: softmax\nshapes: [{M: 4, N: 8}]\nexecutor: slurm\n", "executor"),
    ("op: softmax\nshapes: [{M: 4, N: 8}]\ntrails: 5\n", "trails"),
    ("op: softmax\nshapes: []\n", "shapes"),
    ("op: softmax\nshapes: [{M: 4, N: 8}]\ntrials: 0\n", "trials"),
    ("shapes: [{M: 4, N: 8}]\n", "op"),
    ("op: softmax\nshapes: [{M: 4, N: 8}]\nsampler: tpx\n", "sampler"),
    ("op: softmax\nshapes: [{M: 4, N: 8}]\nsampler_options: {path_flor: 0.75}\n", "sampler_options"),
    ("op: softmax\nshapes: [{M: 4, N: 8}]\nsampler: tpe\nsampler_options: {cap: 0.5}\n", "sampler_options"),
    ("op: softmax\nshape: {M: 4, N: 8}\n", "shape"),                   # the flag's name, not a config field
])
def test_bad_fields_are_named(tmp_path, text, field):
    with pytest.raises(ForgeInputError) as exc:
        load_config(write(tmp_path, text))
    assert exc.value.field == f"c.yaml: {field}"


def test_unknown_field_lists_allowed_ones(tmp_path):
    with pytest.raises(ForgeInputError, match="allowed: .*trials"):
        load_config(write(tmp_path, "op: softmax\nshapes: [{M: 1, N: 1}]\ntrails: 1\n"))


def test_unknown_sampler_fails_before_anything_is_measured_or_written(tmp_path):
    """The sampler is checked with the other settings: no baseline is timed, no run folder made."""
    out = tmp_path / "run"
    proc = run_forge("tune", "--op", "softmax", "--shape", "M=4,N=8", "--sampler", "tpx", "--out", str(out))
    assert proc.returncode == 2 and "sampler" in proc.stderr and "qmc-scrambled" in proc.stderr
    assert "measuring baselines" not in proc.stdout + proc.stderr
    assert not out.exists()


def test_a_sampler_whose_package_is_missing_fails_up_front_naming_the_extra(tmp_path, monkeypatch):
    """Optuna's GP sampler imports torch only after its random start; without torch a tune must stop
    at the settings (exit 2, the extra to install), not crash after ten measured variants."""
    import importlib.util

    import forge.search.strategies as strategies

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(strategies.importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else find_spec(name, *a))
    with pytest.raises(ForgeInputError, match=r"c.yaml: sampler.*needs torch.*forge\[torch\]"):
        load_config(write(tmp_path, "op: softmax\nshapes: [{M: 4, N: 8}]\nsampler: gp\n"))
    with pytest.raises(ForgeInputError, match="strategy: optuna-gp needs torch"):
        strategies.strategy_class("optuna-gp")
    assert strategies.strategy_unavailable("optuna-tpe") is None


def test_sampler_options_are_kept_for_the_run_and_checked_by_value(tmp_path):
    cfg = load_config(write(tmp_path, "op: softmax\nshapes: [{M: 4, N: 8}]\nsampler_options: {path_floor: 0.75}\n"))
    assert cfg.settings()[0].sampler_options == {"path_floor": 0.75}
    with pytest.raises(ForgeInputError, match="good_quantile: Input should be less than 1"):
        load_config(write(tmp_path, "op: softmax\nshapes: [{M: 4, N: 8}]\nsampler_options: {good_quantile: 2}\n"))


def test_cli_flags_override_the_file(tmp_path):
    cfg = load_config(write(tmp_path, "op: softmax\nshapes: [{M: 4, N: 8}]\ntrials: 5\n"), {"trials": 9, "seed": None})
    assert cfg.trials == 9 and cfg.seed == 0


def test_parse_pairs():
    assert parse_pairs("B=1,H=8", "--shape", ints=True) == {"B": 1, "H": 8}
    assert parse_pairs("block_q=32|64,order=qk,causal=true", "--space") == {
        "block_q": [32, 64], "order": "qk", "causal": True}
    with pytest.raises(ForgeInputError, match="--shape S"):
        parse_pairs("S=abc", "--shape", ints=True)
    for typo in ("M=64,,N=64", "M=64,", "=5", "M=64,N"):       # nothing dropped without a word
        with pytest.raises(ForgeInputError, match="expected NAME=VALUE"):
            parse_pairs(typo, "--shape", ints=True)


@pytest.mark.parametrize("args,needle", [
    (["tune", "--op", "attention", "--shape", "B=1,Hq=6,Hkv=4,S=8,D=8"], "shape.Hkv"),
    (["tune", "--op", "nope", "--shape", "M=1"], "unknown operator 'nope'"),
    # the benchmarks' spellings of a name get the nearest one forge knows
    (["tune", "--op", "rms_norm"], "unknown operator 'rms_norm'; did you mean 'rmsnorm'? allowed: attention,"),
    (["tune", "--op", "softmax", "--target", "H100"], "unknown target 'H100'; did you mean 'h100'?"),
    (["tune", "--op", "softmax", "--shape", "M=4,n=8"], "shape.n: unknown dimension for softmax; did you mean 'N'?"),
    (["tune", "--op", "softmax", "--shape", "M=4,N=8", "--target", "tpu9"], "unknown target 'tpu9'"),
    (["tune", "--op", "softmax", "--shape", "M=4,N=8", "--executor", "slurm"], "executor"),
    (["tune", "--op", "softmax", "--shape", "M=4,N=x"], "--shape N"),
    (["tune", "--op", "softmax", "--shape", "M=4,N=8", "--sampler-options", "cap=2"], "--sampler-options.cap"),
    (["tune", "--op", "softmax", "--shape", "M=4,N=8", "--sampler-options", "nope=1"], "not an option of forge"),
    # an empty space names the rule that empties it, with an example point
    (["tune", "--op", "softmax", "--shape", "M=100,N=40", "--target", "ascend910b2", "--space", "reduce=packed"],
     "packed rows need rows of at most 16 elements"),
    (["report", "/nonexistent/run"], "no such folder"),
    # a name given twice, or an alias beside a dimension it sets: refused, not "the last one wins"
    (["tune", "--op", "softmax", "--shape", "M=4,N=8,M=2"], "--shape M: given twice"),
    (["tune", "--op", "softmax", "--shape", "M=4,N=8", "--attr", "x=1,x=2"], "--attr x: given twice"),
    (["tune", "--op", "attention", "--shape", "B=1,H=2,S=8,D=8", "--attr", "causal=true", "--no-causal"],
     "--causal: given twice: --attr causal=True and --no-causal"),
    # an attribute or space parameter a flag gave is named as that flag
    (["tune", "--op", "rmsnorm", "--shape", "M=4,N=8", "--causal"], "--causal: unknown attribute for rmsnorm"),
    (["tune", "--op", "rmsnorm", "--shape", "M=4,N=8", "--space", "bogus=1"], "--space bogus: unknown parameter"),
    (["tune", "--op", "attention", "--shape", "B=1,H=4,Hq=8,S=64,D=64"], "shape.H: sets both Hq and Hkv"),
    (["tune", "--op", "attention", "--shape", "B=1,H=4,S=64,Sq=32,D=64"], "shape.S: sets both Sq and Skv"),
    (["tune", "--op", "softmax", "--shape", ""], "shape.M: missing dimension"),
    # an error in a value given by an option names the option
    (["tune", "--op", "softmax", "--shape", "M=4,N=8", "--seed", "-1"], "--seed: Input should be greater than or equal"),
    (["tune", "--op", "softmax", "--shape", "M=4,N=8", "--time-budget", "0"], "--time-budget: Input should be"),
    # infinity or a huge number would overflow a subprocess deadline, a big seed the samplers
    (["tune", "--op", "softmax", "--shape", "M=4,N=8", "--timeout", "inf"], "--timeout: Input should be less than or "
                                                                             "equal to 604800 (got inf)"),
    (["tune", "--op", "softmax", "--shape", "M=4,N=8", "--timeout", "1e12"], "--timeout: Input should be less than"),
    (["tune", "--op", "softmax", "--shape", "M=4,N=8", "--time-budget", "inf"], "--time-budget: Input should be less"),
    (["tune", "--op", "softmax", "--shape", "M=4,N=8", "--seed", "4294967296"], "--seed: Input should be less than or "
                                                                                 "equal to 4294967295"),
    # data larger than this machine's memory: refused up front, not failed variant by variant
    (["tune", "--op", "softmax", "--shape", "M=999999999999,N=256"],
     "shape: softmax[M=999999999999,N=256] float32 needs about"),
    # no A100 here (nor on an sm_90 test machine): refused before a variant is built
    (["tune", "--op", "rmsnorm", "--shape", "M=64,N=256", "--target", "a100", "--measure", "device"],
     "measure: device measurement requested but"),
    (["bench", "--suite", "cannbench", "--target", "a100", "--measure", "device", "--ops", "rmsnorm"],
     "measure: device measurement requested but"),
    # a dtype the target does not take: the error names the dtypes it takes instead
    (["tune", "--op", "attention", "--target", "ascend910b2", "--shape", "B=1,H=8,S=1024,D=64", "--dtype", "float32"],
     "dtype: attention[B=1,Hq=8,Hkv=8,Sq=1024,Skv=1024,D=64] float32 is not supported on ascend910b2: attention on "
     "Ascend takes float16/bfloat16 inputs (fp32 softmax inside), not float32; allowed there: float16, bfloat16"),
])
def test_cli_errors_exit_2_and_name_the_field(args, needle):
    proc = run_forge(*args)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_attention_config_tunes_on_another_target_in_that_targets_dtype(tmp_path):
    """The README's CPU config reused with --target for Ascend: it names no dtype, so each shape is
    tuned in the first dtype Ascend takes (float16), said once, not refused as float32."""
    config = Path(__file__).parents[1] / "configs" / "attention.yaml"
    proc = run_forge("tune", "--op", "attention", "--target", "ascend910b2", "--config", str(config), "--trials", "1",
                     "--top-k", "0", "--no-bank", "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("no --dtype given: using float16") == 1
    tuned = [line for line in proc.stderr.splitlines() if line.startswith("forge tune attention[")]
    assert len(tuned) == 2 and all("float16 on ascend910b2" in line for line in tuned), tuned


def test_ops_and_targets_list():
    r = CliRunner().invoke(app, ["ops"], terminal_width=200)
    assert r.exit_code == 0 and "attention" in r.output and "rmsnorm" in r.output
    swiglu = next(line for line in r.output.splitlines() if "swiglu" in line)
    assert "cpu, cuda, ascend" in swiglu
    r = CliRunner().invoke(app, ["targets"])
    assert r.exit_code == 0 and "cpu" in r.output


def test_console_script_usage_errors_exit_2_without_traceback():
    """Through the console script's entry point (main(), not CliRunner): an unknown option or a bad
    value is a usage message and exit code 2, never a traceback. The first two in a process of their
    own, as a user runs them (the second reaches for a Ray cluster); the rest in this one."""
    for argv, needle in ((["tune", "--bogus", "1"], "No such option"),
                         (["tune", "--op", "softmax", "--shape", "M=8,N=8", "--executor", "ray",
                           "--ray-address", "127.0.0.1:1"], "no Ray cluster answers at 127.0.0.1:1")):
        res = subprocess.run([sys.executable, "-m", "forge.cli", *argv], capture_output=True, text=True, timeout=120)
        assert res.returncode == 2, (argv, res.stderr[-2000:])
        assert needle in res.stderr and "Traceback" not in res.stderr
    for argv, needle in ((["tune", "--trials", "abc"], "--trials"),
                         (["tune", "--op", "nope"], "unknown operator 'nope'"),
                         (["replay", "/nonexistent/cache.json"], "no such file"),
                         (["bench", "--suite", "cannbench", "--target", "nope"], "unknown target 'nope'"),
                         (["bank", "show", "--op", "nope"], "unknown operator 'nope'"),
                         (["bench", "--suite", "cannbench", "--target", "cpu", "--ops", "nope"],
                          "--ops: no case of suite 'cannbench' matches nope; allowed: attention, gqa"),
                         (["bench", "--suite", "cannbench", "--target", "cpu", "--ops", " , "],
                          "--ops: names no operator"),
                         (["tune", "--op", "softmax", "--shape", "M=8,N=8", "--out", __file__], "--out"),
                         (["bench", "--suite", "cannbench", "--target", "cpu", "--out", __file__], "--out"),
                         (["bench", "--suite", "cannbench", "--target", "cpu", "--report-only", "--out",
                           "/nonexistent/bench"], "holds no bench yet"),
                         (["bank", "export", "/proc/forge-nope/bank.json"], "cannot write"),
                         (["replay", str(Path(__file__).parents[1] / "benchmarks" / "spaces" / "cpu_conv2d.json.gz"),
                           "--export", "/proc/forge-nope/x.json"],
                          "cannot write")):
        res = run_forge(*argv)
        assert res.returncode == 2, (argv, res.stderr[-2000:])
        assert needle in res.stderr and "Traceback" not in res.stderr


@pytest.mark.slow
def test_a_config_of_several_shapes_ends_with_them_side_by_side(tmp_path):
    cfg = write(tmp_path, f"op: softmax\nshapes: [{{M: 4, N: 8}}, {{M: 8, N: 16}}]\ntrials: 2\ntop_k: 0\nreps: 2\n"
                          f"bank: false\nvendor: false\nout: {tmp_path / 'r'}\n")
    proc = run_forge("tune", "--config", str(cfg))
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = proc.stdout[proc.stdout.index("2 shapes of softmax tuned"):]
    assert "softmax[M=4,N=8] float32" in summary and "softmax[M=8,N=16] float32" in summary
    assert summary.count("complete") == 2
    # a config's folder and a run never share a folder (one would hide the other), either way round
    for argv, needle in ((["--op", "softmax", "--shape", "M=4,N=8", "--out", str(tmp_path / "r")], "holds runs of its own"),
                         (["--config", str(cfg), "--out", str(tmp_path / "r" / "shape0")], "holds a run; a config of"),
                         (["--resume", str(tmp_path / "r")], "run the same `forge tune --config")):
        refused = run_forge("tune", *argv)
        assert refused.returncode == 2 and needle in refused.stderr, (argv, refused.stderr[-2000:])
    assert not (tmp_path / "r" / "run.json").exists() and not (tmp_path / "r" / "shape0" / "shape0").exists()
    # forge report on the config's folder: each shape's leaderboard, then the shapes side by side
    rep = run_forge("report", str(tmp_path / "r"), "--format", "json")
    assert rep.returncode == 0, rep.stderr[-2000:]
    assert rep.stdout.index("softmax[M=4,N=8]") < rep.stdout.index("softmax[M=8,N=16]") < rep.stdout.index(
        "2 shapes of softmax")
    for i in range(2):
        assert json.loads((tmp_path / "r" / f"shape{i}" / "leaderboard.json").read_text())["rows"]
    one_file = run_forge("report", str(tmp_path / "r"), "-o", "x.md")
    assert one_file.returncode == 2 and "--output: " in one_file.stderr and "2 shapes" in one_file.stderr
    # the same command again (as after an interruption): tuned shapes kept, a missing one tuned
    import shutil

    shutil.rmtree(tmp_path / "r" / "shape1")
    again = run_forge("tune", "--config", str(cfg))
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"{tmp_path / 'r' / 'shape0'}: tuned already, kept" in again.stderr
    assert (tmp_path / "r" / "shape1" / "run.json").is_file()
    more = run_forge("tune", "--config", str(cfg), "--trials", "3")           # what --resume may change
    assert more.returncode == 0, more.stderr[-2000:]
    assert json.loads((tmp_path / "r" / "shape0" / "run.json").read_text())["evaluated"] == 3
    back = run_forge("tune", "--config", str(cfg))         # the config's smaller budget: kept as searched
    assert back.returncode == 0 and back.stderr.count("tuned already, kept") == 2, back.stderr[-2000:]
    assert "3 of 3 variants" in back.stdout and "of 2 variants" not in back.stdout
    other = run_forge("tune", "--config", str(cfg), "--reps", "3")
    assert other.returncode == 2 and "holds a run of other settings (reps)" in other.stderr, other.stderr[-2000:]


@pytest.mark.parametrize("shapes,needle", [
    ("[{M: 4, N: 8}, {M: 4, X: 8}]", "c.yaml: shapes[1].X: unknown dimension for softmax"),
    ("[{M: 4, X: 8}]", "c.yaml: shapes[0].X: unknown dimension for softmax"),        # the config's field, one shape too
    # larger than this machine's memory (any machine's: 3.6 PiB of float32 in and out)
    ("[{M: 4, N: 8}, {M: 999999999999, N: 256}]",
     "c.yaml: shapes[1]: softmax[M=999999999999,N=256] float32 needs about"),
    ("[{M: 4, N: 8}]\nspace: {threads: 99}", "c.yaml: space.threads: value 99 not allowed"),
    # placement set in the config is named as the config's field, not as a flag never given
    ("[{M: 4, N: 8}]\nray_address: ray://head:1", "c.yaml: ray_address: 'ray://head:1' names a Ray cluster"),
    ("[{M: 4, N: 8}]\ndevices: 2", "c.yaml: devices: 2 device slots need --executor ray"),
])
def test_every_shape_of_a_config_is_checked_before_the_first_is_tuned(tmp_path, shapes, needle):
    cfg = write(tmp_path, f"op: softmax\nshapes: {shapes}\ntrials: 2\nout: {tmp_path / 'r'}\n")
    proc = run_forge("tune", "--config", str(cfg))
    assert proc.returncode == 2 and needle in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "r").exists()                       # nothing tuned before the refusal


def test_a_shape_given_by_flag_over_a_config_is_named_as_the_flag_gives_it(tmp_path):
    from typer.testing import CliRunner

    cfg = write(tmp_path, f"op: softmax\nshapes: [{{M: 4, N: 8}}]\ntrials: 2\nout: {tmp_path / 'r'}\n")
    res = CliRunner().invoke(app, ["tune", "--config", str(cfg), "--shape", "M=4,X=8"])
    assert isinstance(res.exception, ForgeInputError) and str(res.exception).startswith("shape.X: unknown dimension")


def test_no_dtype_given_starts_in_one_the_target_takes(tmp_path):
    """attention on a GPU takes float16/bfloat16, not the default float32: with no --dtype the run
    starts in the first the target takes and says so; a given --dtype is never replaced."""
    from typer.testing import CliRunner

    from forge.tuner import dtype_the_target_takes

    assert dtype_the_target_takes(TuneSettings(op="attention", target="h100", shape={"B": 1, "Hq": 2, "Hkv": 1,
                                                                                     "S": 64, "D": 64})) == \
        ["float16", "bfloat16"]
    assert dtype_the_target_takes(TuneSettings(op="softmax", target="h100", shape={"M": 8, "N": 64})) == []
    blocked = tmp_path / "file"
    blocked.write_text("")
    argv = ["tune", "--op", "attention", "--target", "h100", "--shape", "B=1,Hq=2,Hkv=1,S=64,D=64",
            "--out", str(blocked / "run")]                      # stops right after the dtype is chosen
    res = CliRunner().invoke(app, argv)
    assert "no --dtype given: using float16 (attention on h100 takes float16, bfloat16, not float32)" in res.output
    res = CliRunner().invoke(app, [*argv, "--dtype", "float32"])
    assert isinstance(res.exception, ForgeInputError) and res.exception.field == "dtype"
    # the same from a config with no `dtype:`; a config's own dtype is never replaced
    cfg = write(tmp_path, f"op: attention\ntarget: h100\nshapes: [{{B: 1, H: 2, S: 64, D: 64}}]\n"
                          f"out: {blocked / 'run'}\n")
    res = CliRunner().invoke(app, ["tune", "--config", str(cfg)])
    assert "no --dtype given: using float16 (attention on h100 takes float16, bfloat16, not float32)" in res.output
    cfg.write_text(cfg.read_text() + "dtype: float32\n")
    res = CliRunner().invoke(app, ["tune", "--config", str(cfg)])
    assert isinstance(res.exception, ForgeInputError) and res.exception.field == "c.yaml: dtype"


@pytest.mark.parametrize("flags, field", [
    (["--causal"], "--causal"),
    (["--attr", "nope=1"], "--attr nope"),
    (["--space", "bogus=1"], "--space bogus"),
    ([], "c.yaml: attrs.bad"),
])
def test_an_attribute_or_parameter_given_by_flag_over_a_config_is_named_as_the_flag(tmp_path, flags, field):
    from typer.testing import CliRunner

    cfg = write(tmp_path, f"op: rmsnorm\nshapes: [{{M: 4, N: 8}}]\nout: {tmp_path / 'r'}\n"
                          + ("" if flags else "attrs: {bad: 1}\n"))
    res = CliRunner().invoke(app, ["tune", "--config", str(cfg), *flags])
    assert isinstance(res.exception, ForgeInputError) and res.exception.field == field, res.exception


def test_version():
    from typer.testing import CliRunner

    from forge import __version__

    res = CliRunner().invoke(app, ["--version"])
    assert res.exit_code == 0 and res.output.strip() == f"forge {__version__}"


def test_a_target_refusing_one_dimension_names_it():
    from forge.tuner import checked_problem

    s = TuneSettings(op="attention", target="ascend910b2", dtype="float16",
                     shape={"B": 1, "Hq": 2, "Hkv": 1, "S": 64, "D": 72})
    with pytest.raises(ForgeInputError, match=r"^shape\.D: .* D=72 is not a multiple of 16"):
        checked_problem(s)


@pytest.mark.parametrize("content, says", [
    (b"\xff\xfeop: rmsnorm\n", "not UTF-8 text (byte 0"),
    # PyYAML keeps the last of a key given twice: the run tuned softmax without a word
    (b"op: rmsnorm\nop: softmax\nshapes: [{M: 4, N: 8}]\n", "found the key 'op' a second time (first at line 1)"),
    (b"op: rmsnorm\nshapes: [{M: 4, N: 8}]\nspace: {threads: []}\n",
     "space.threads: an empty list leaves no value to tune"),
])
def test_a_config_that_cannot_be_read_as_written_is_named_not_a_traceback(tmp_path, content, says):
    path = tmp_path / "c.yaml"
    path.write_bytes(content)
    res = run_forge("tune", "--config", str(path), "--no-bank", "--trials", "1", "--out", str(tmp_path / "run"))
    assert res.returncode == 2 and says in res.stderr and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert not (tmp_path / "run").exists()


def test_allowed_list_suggests_only_a_close_name():
    """A suggestion for a far-off name would point users at the wrong thing."""
    from forge.errors import allowed_list

    assert allowed_list("nope", ["attention", "rmsnorm"]) == "allowed: attention, rmsnorm"
    assert allowed_list("swi_glu", ["swiglu", "softmax"]) == "did you mean 'swiglu'? allowed: swiglu, softmax"
    assert allowed_list("Ascend910B2", ["ascend910b2", "ascend910b3"]).startswith("did you mean 'ascend910b2'?")
    assert allowed_list("x", []) == "allowed: none"
    dtypes = ["float32", "float16", "bfloat16"]
    assert [allowed_list(v, dtypes).split("?")[0] for v in ("fp16", "bf16", "FP32")] == \
        ["did you mean 'float16'", "did you mean 'bfloat16'", "did you mean 'float32'"]
