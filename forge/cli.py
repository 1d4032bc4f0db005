"""forge's command line: tune, report, show, ops, targets (+ bench, bank, replay when present).

Bad input is one line naming the field and what is allowed, with exit code 2.
"""
from __future__ import annotations

import os
import signal
import sys


def _aborted_while_loading(*_: Any) -> None:
    """Ctrl-C while forge's modules load (a second or more on a busy machine): exit as main()
    does on Ctrl-C, without the traceback of whatever import it interrupted."""
    os.write(2, b"aborted\n")
    sys.exit(130)


signal.signal(signal.SIGINT, _aborted_while_loading)     # main() puts Python's own handler back

import importlib  # noqa: E402  (after the handler: these imports are what a Ctrl-C interrupts)
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

from forge.errors import ForgeInputError, allowed_list, writing
from forge.report.progress import make_console
from forge.report.tables import print_fitted
from forge.search.strategies import sampler_choices

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Autotuning search for fused AI operators on Ascend NPUs, NVIDIA GPUs and CPUs.")
out = make_console()
err = make_console(stderr=True)


def _print_version(value: bool) -> None:
    if value:
        from forge import __version__

        out.print(f"forge {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                       help="print forge's version and exit")) -> None:
    """Autotuning search for fused AI operators on Ascend NPUs, NVIDIA GPUs and CPUs."""

# What a resumed run may change: its budget, and where it runs (not what it searches or measures).
RESUME_OVERRIDES = ("trials", "time_budget", "patience", "executor", "ray_address", "devices")
EXTRA_COMMANDS = ("show", "runs", "bench", "compare", "bank", "replay")


def parse_value(text: str) -> Any:
    t = text.strip()
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(t)
        except ValueError:
            pass
    return t


def parse_pairs(text: str | None, field: str, ints: bool = False) -> dict[str, Any]:
    """`NAME=VALUE,...`; a value may be a `|`-separated list (space restrictions)."""
    result: dict[str, Any] = {}
    if not text:
        return result
    for item in text.split(","):
        if "=" not in item or not item.split("=", 1)[0].strip():
            raise ForgeInputError(field, f"expected NAME=VALUE,... got {item!r} in {text!r}")
        k, v = (s.strip() for s in item.split("=", 1))
        if k in result:
            raise ForgeInputError(f"{field} {k}", "given twice; give each name once")
        if ints:
            try:
                result[k] = int(v)
            except ValueError:
                raise ForgeInputError(f"{field} {k}", f"must be an integer, got {v!r}") from None
        else:
            result[k] = [parse_value(x) for x in v.split("|")] if "|" in v else parse_value(v)
    return result


@app.command()
def tune(
    op: Optional[str] = typer.Option(None, help="operator (see `forge ops`)"),
    target: Optional[str] = typer.Option(None, help="target (see `forge targets`); default cpu"),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML search config"),
    shape: Optional[str] = typer.Option(None, help="dimensions in the op's names, e.g. B=1,H=8,S=1024,D=64"),
    dtype: Optional[str] = typer.Option(None, help="float32 | float16 | bfloat16"),
    causal: Optional[bool] = typer.Option(None, "--causal/--no-causal", help="attention: causal mask"),
    attr: Optional[str] = typer.Option(None, help="other operator attributes, e.g. eps=1e-5,residual=true"),
    space: Optional[str] = typer.Option(None, help="fix or restrict parameters, e.g. threads=2,block_q=32|64"),
    trials: Optional[int] = typer.Option(None, help="unique variants to evaluate (default 40)"),
    time_budget: Optional[float] = typer.Option(None, help="seconds of search wall time"),
    patience: Optional[int] = typer.Option(None, help="stop proposing after N evaluations without improvement "
                                                     "(the evaluations already running still finish)"),
    sampler: Optional[str] = typer.Option(None, help=sampler_choices()),
    sampler_options: Optional[str] = typer.Option(None, help="the sampler's own options, e.g. path_floor=0.75,"
                                                  "acquisition=ei (a wrong name lists the allowed ones)"),
    seed: Optional[int] = typer.Option(None, help="seeds the search and the inputs (default 0): the same seed "
                                                  "proposes the same variants"),
    executor: Optional[str] = typer.Option(None, help="local | ray"),
    ray_address: Optional[str] = typer.Option(None, help="with --executor ray: join this Ray cluster (default: "
                                                         "RAY_ADDRESS, else the cluster `ray start` runs on this machine, else a local one)"),
    devices: Optional[int] = typer.Option(None, help="with --executor ray: devices measuring at once, one "
                                                      "variant each (default 1)"),
    measure: Optional[str] = typer.Option(None, help="auto | model | device"),
    reps: Optional[int] = typer.Option(None, help="timed repetitions per variant"),
    timeout: Optional[float] = typer.Option(None, help="seconds before a variant counts as hung"),
    top_k: Optional[int] = typer.Option(None, help="variants re-measured at the end"),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="run folder (default results/<op>-<target>-<time>)"),
    resume: Optional[Path] = typer.Option(None, help="continue the interrupted run in this folder"),
    no_bank: bool = typer.Option(False, "--no-bank", help="neither use nor update the tuning bank"),
    no_host_check: bool = typer.Option(False, "--no-host-check", help="CUDA without a GPU: do not check variants "
                                                                      "on the CPU by host emulation"),
    no_vendor: bool = typer.Option(False, "--no-vendor", help="do not time the vendor's kernel (no '× vendor' "
                                                              "column; on the CPU it saves PyTorch's import)"),
) -> None:
    """Tune one operator on one target and print its leaderboard."""
    from forge import tuner
    from forge.config import load_config, make_settings

    flags = {"dtype": dtype, "target": target, "trials": trials, "time_budget": time_budget,
             "patience": patience, "sampler": sampler, "seed": seed, "executor": executor,
             "ray_address": ray_address, "devices": devices, "measure": measure, "reps": reps, "timeout": timeout,
             "top_k": top_k, "bank": False if no_bank else None, "host_check": False if no_host_check else None,
             "vendor": False if no_vendor else None}
    options = parse_pairs(sampler_options, "--sampler-options")
    attrs = parse_pairs(attr, "--attr")
    if causal is not None:
        if "causal" in attrs:
            raise ForgeInputError("--causal", f"given twice: --attr causal={attrs['causal']} and "
                                              f"--{'' if causal else 'no-'}causal; give one")
        attrs["causal"] = causal
    if resume is not None:
        given = {k: v for k, v in {**flags, "op": op, "shape": shape, "attr": attr, "causal": causal, "space": space,
                                   "sampler_options": sampler_options, "config": config, "out": out_dir}.items()
                 if v is not None}
        fixed = sorted(set(given) - set(RESUME_OVERRIDES))
        if fixed:
            from forge.config import flag_name

            raise ForgeInputError("--resume", f"{', '.join(map(flag_name, fixed))}: fixed by the run being resumed; "
                                              f"allowed with --resume: {', '.join(map(flag_name, RESUME_OVERRIDES))}")
        run = tuner.resume(resume, console=err, **given)
        _exit_unless_correct([run] if not _print_report(run) else [])
        return
    # an attribute or a space parameter given by a flag is named as the flag gives it
    by_flag = {f"attrs.{k}": f"--attr {k}" for k in parse_pairs(attr, "--attr")}
    by_flag |= {"attrs.causal": "--causal"} if causal is not None else {}
    by_flag |= {f"space.{k}": f"--space {k}" for k in parse_pairs(space, "--space")}
    if config is not None:
        cfg = load_config(config, {"op": op, "out": out_dir, **flags})
        if shape is not None:
            cfg.shapes = [parse_pairs(shape, "--shape", ints=True)]
        if attrs:
            cfg.attrs = {**cfg.attrs, **attrs}
        if space:
            cfg.space = {**cfg.space, **parse_pairs(space, "--space")}
        if options:
            cfg.sampler_options = {**cfg.sampler_options, **options}
            _check_options(cfg.sampler, cfg.sampler_options)
        given = {k for k, v in flags.items() if v is not None} | ({"shape"} if shape else set())
        with _named_as_flags(by_flag, otherwise=f"{config.name}: "):
            settings = cfg.settings()
        if dtype is None and "dtype" not in cfg.model_fields_set:
            said: set[str] = set()
            settings = [_dtype_the_target_takes(s, said) for s in settings]
        _check_shapes(settings, config, given, by_flag)
        if len(settings) > 1 and settings[0].out is not None:
            _check_config_folder(Path(settings[0].out).parent, "--out" if out_dir else f"{config.name}: out")
    else:
        if not op:
            raise ForgeInputError("--op", "missing; give --op or --config (operators: see `forge ops`)")
        if shape is not None:
            dims = parse_pairs(shape, "--shape", ints=True)
        else:
            from forge.ops import get_op
            from forge.targets import get_target

            if flags.get("target"):
                get_target(flags["target"])     # an unknown target is named before the default shape is
            dims = dict(get_op(op).default_shape)
            if not dims:
                raise ForgeInputError("--shape", f"missing; {op} needs {', '.join(get_op(op).dims)}")
            err.print(f"no --shape given: using {op}'s default {','.join(f'{k}={v}' for k, v in dims.items())}")
        _check_options(sampler or "forge", options)
        with _named_as_flags(by_flag):
            settings = [make_settings(op=op, shape=dims, attrs=attrs, sampler_options=options,
                                      space=parse_pairs(space, "--space"), out=out_dir, **flags)]
        if dtype is None:
            settings = [_dtype_the_target_takes(settings[0])]
    runs, empty = [], []
    for i, s in enumerate(settings):
        try:
            with _named_as_flags(by_flag if config is None else {}):
                runs.append(_tune_or_continue(s, console=err) if len(settings) > 1 else tuner.tune(s, console=err))
        except KeyboardInterrupt:
            left = ", ".join(f"shapes[{j}]" for j in range(i + 1, len(settings)))
            if len(settings) > 1 and settings[0].out:
                err.print(f"to continue the whole config, run the same command again (--out "
                          f"{Path(settings[0].out).parent}): tuned shapes are kept, the interrupted one resumes"
                          + (f", then the rest are tuned ({left})" if left else ""), highlight=False, markup=False)
            elif left:
                err.print(f"not tuned: {left} (give --out to make a config's run continuable)", highlight=False,
                          markup=False)
            raise
        if not _print_report(runs[-1]):
            empty.append(runs[-1])
    if len(runs) > 1:                    # a config's shapes side by side at the end
        from forge.commands.runs import print_rows, run_row

        print_rows([run_row(r) for r in runs], f"{len(runs)} shapes of {settings[0].op} tuned", out)
    _exit_unless_correct(empty)


def _tune_or_continue(settings: Any, console: Any) -> Path:
    """One shape of a config: a shape folder that already holds its run (the same command run
    again after an interruption) is kept when finished and resumed when not, as `--resume` would,
    with what `--resume` may change (RESUME_OVERRIDES: more trials, another executor) taken from
    the config; a run of other settings there is refused rather than mixed in."""
    from forge import tuner

    folder = settings.out
    if folder is None or not (Path(folder) / tuner.RUN_FILE).is_file():
        return tuner.tune(settings, console=console)
    info = tuner.read_run_file(folder)
    had = info.get("settings") if isinstance(info.get("settings"), dict) else {}
    now = settings.model_dump(mode="json")
    differ = sorted(k for k in now if k != "out" and had.get(k) != now[k])
    fixed = [k for k in differ if k not in RESUME_OVERRIDES]
    if fixed:
        raise ForgeInputError("--out", f"{folder} holds a run of other settings ({', '.join(fixed)}); give "
                                       "another --out, or resume it alone: forge tune --resume " + str(folder))
    # a finished run is continued only for a deeper search: a smaller budget, or another place
    # to run, leaves it as it is (and its recorded budget true)
    if info.get("status") == "complete" and not any(tuner.deeper(k, now[k], had.get(k)) for k in differ):
        console.print(f"{folder}: tuned already, kept", highlight=False)
        return Path(folder)
    return tuner.resume(Path(folder), console=console, **{k: now[k] for k in differ})


def _exit_unless_correct(empty: list[Path]) -> None:
    """A run that ends without one correct variant has no result to use: exit 1, so a script or a
    scheduler sees the failure (its records and reasons are kept in the folder all the same)."""
    if empty:
        err.print(f"[red]no correct variant in {', '.join(map(str, empty))}[/red]: see the failed variants "
                  f"above (`forge report RUN` shows them again); exit status 1", highlight=False)
        raise typer.Exit(1)


def _check_config_folder(folder: Path, field: str) -> None:
    """A config of several shapes writes shape<i> run folders into its out folder: one that is a
    run or a bench itself would have them hidden inside it."""
    from forge.tuner import folder_kind

    what = folder_kind(folder)
    if what:
        raise ForgeInputError(field, f"{folder} holds {what}; a config of several shapes writes a folder per "
                                     "shape (shape0, shape1, …) into its out folder: give another one")


@contextmanager
def _named_as_flags(by_flag: dict[str, str], otherwise: str = "") -> Iterator[None]:
    """An error about a setting a flag gave (attrs.causal from --causal) named as that flag; any
    other, with `otherwise` before its field (the config file that set it)."""
    try:
        yield
    except ForgeInputError as exc:
        if exc.field not in by_flag and not otherwise:
            raise
        raise ForgeInputError(by_flag.get(exc.field, f"{otherwise}{exc.field}"),
                              str(exc).removeprefix(f"{exc.field}: ")) from None


def _dtype_the_target_takes(settings: Any, said: set[str] | None = None) -> Any:
    """Settings with no dtype given (neither --dtype nor a config's `dtype:`), moved to the first
    dtype the target takes the op in where it does not take the default, and said in one line
    (once per run: `said` holds the lines a config's earlier shapes printed)."""
    from forge import tuner
    from forge.config import TuneSettings

    try:
        takes = tuner.dtype_the_target_takes(settings)
    except ForgeInputError:       # another fault of the settings: the checks that follow name it
        return settings
    if not takes:
        return settings
    line = (f"no --dtype given: using {takes[0]} ({settings.op} on {settings.target} takes "
            f"{', '.join(takes)}, not {TuneSettings.model_fields['dtype'].default})")
    if said is None or line not in said:
        err.print(line, highlight=False)
    if said is not None:
        said.add(line)
    return settings.model_copy(update={"dtype": takes[0]})


def _check_shapes(settings: list[Any], config: Path, flags: set[str], by_flag: dict[str, str]) -> None:
    """Every shape of a config is checked before the first is tuned: a typo in the last one would
    otherwise surface only after the others' searches. An error names the config's field, or the
    flag (in `flags`, the settings given on the command line; in `by_flag`, the attributes and
    space parameters, with the flag that gave each) that overrode it."""
    from forge.executor import check_placement
    from forge.tuner import checked_problem

    for i, s in enumerate(settings):
        try:
            _, backend, _ = checked_problem(s)
            check_placement(s.devices, s.executor, backend, s.ray_address)
        except ForgeInputError as exc:
            field, flagged = exc.field, exc.field.startswith("--")
            if field.startswith("shape"):     # the config's list, unless --shape replaced it
                flagged = "shape" in flags
                field = ("shape" if flagged else f"shapes[{i}]") + field.removeprefix("shape")
            elif flagged and field[2:].replace("-", "_") not in flags:
                field, flagged = field[2:].replace("-", "_"), False          # set in the config, not by the flag
            elif field in by_flag:
                field, flagged = by_flag[field], True
            raise ForgeInputError(field if flagged else f"{config.name}: {field}",
                                  str(exc).removeprefix(f"{exc.field}: ")) from None


def _check_options(sampler: str, options: dict[str, Any]) -> None:
    """--sampler-options checked against the sampler's schema, the error naming the flag."""
    from forge.search.strategies import check_strategy_options, strategy_names

    if options and sampler in strategy_names():   # an unknown sampler is reported by the settings
        check_strategy_options(sampler, options, "--sampler-options")


def _print_report(run: Path) -> bool:
    """Prints the run's leaderboard; False when it has no correct variant."""
    from forge.report.leaderboard import build_leaderboard
    from forge.report.render import print_leaderboard

    lb = build_leaderboard(run)
    print_leaderboard(lb, out)
    out.print(f"run folder: {run}" + (f"   (forge report {run} | forge show {run} 1)" if lb.rows else ""))
    return bool(lb.rows)


@app.command()
def report(
    run: Path = typer.Argument(..., help="run folder or bench folder"),
    fmt: Optional[str] = typer.Option(None, "--format", "-f", help="also write html | md | json | csv (a bench "
                                                                    "folder: html | md | json)"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="file to write (default <run>/leaderboard.<fmt>; "
                                                                     "without --format, its suffix names the format)"),
    top: Optional[int] = typer.Option(None, help="rows shown in the terminal (default 10; a bench's cases: 60)"),
) -> None:
    """Print a run's leaderboard (or a bench folder's); with --format, also write it to a file."""
    from forge.bench.runner import BENCH_FILE

    if top is not None and top < 1:
        raise ForgeInputError("--top", f"must be at least 1, got {top}")
    field = "--format"
    if output is not None and fmt is None:     # -o x.md: the suffix names the format
        suffix = output.suffix.lstrip(".").lower()
        fmt, field = {"htm": "html", "markdown": "md"}.get(suffix, suffix), "--output"
        if not fmt:
            raise ForgeInputError("--output", f"cannot tell the format from {output.name}: give --format "
                                              "(html | md | json, and csv for a run)")
    shapes = _config_shape_runs(Path(run))
    if shapes:
        _report_config(Path(run), shapes, fmt, output, field, top)
        return
    if (Path(run) / BENCH_FILE).is_file():
        from forge.bench.board import build_board
        from forge.bench.render import FILES, to_terminal

        formats = {name: render for name, (_, render) in FILES.items()}
        _check_format(fmt, formats, "a bench folder", field)
        report = build_board(run)
        to_terminal(report, out, max_cases=top or 60)
    else:
        from forge.report.leaderboard import build_leaderboard
        from forge.report.render import print_leaderboard

        formats = _run_formats()
        _check_format(fmt, formats, "a run folder", field)
        report = build_leaderboard(run)
        print_leaderboard(report, out, top=top or 10)
    if fmt:
        path = output or Path(run) / f"leaderboard.{fmt}"
        with writing("--output", path):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(formats[fmt](report))
        out.print(f"wrote {path}")


def _config_shape_runs(folder: Path) -> list[Path]:
    """The run folders of a config's shapes (shape0, shape1, ...) where `folder` is such a config's
    folder rather than a run, else []."""
    from forge.config import shape_folder
    from forge.results.store import RUN_FILE

    if (folder / RUN_FILE).is_file():
        return []
    runs = []
    while (shape_folder(folder, len(runs)) / RUN_FILE).is_file():
        runs.append(shape_folder(folder, len(runs)))
    return runs


def _report_config(folder: Path, runs: list[Path], fmt: str | None, output: Path | None, field: str,
                   top: int | None) -> None:
    """A config's folder: each shape's leaderboard in turn, then the shapes side by side, as `forge
    tune --config` ends; with --format each run's file is written in its own folder."""
    from forge.commands.runs import print_rows, run_row
    from forge.report.leaderboard import build_leaderboard
    from forge.report.render import print_leaderboard

    formats = _run_formats()
    _check_format(fmt, formats, "a run folder", field)
    if output is not None:
        raise ForgeInputError("--output", f"{folder} holds the runs of {len(runs)} shapes, one leaderboard each; give "
                                          f"--format alone to write each in its run's folder, or report one run "
                                          f"(forge report {runs[0]} -o {output})")
    for path in runs:
        report = build_leaderboard(path)
        print_leaderboard(report, out, top=top or 10)
        if fmt:
            target = path / f"leaderboard.{fmt}"
            with writing("--format", target):
                target.write_text(formats[fmt](report))
            out.print(f"wrote {target}")
    print_rows([run_row(r) for r in runs], f"{len(runs)} shapes of {report.info['problem']['op']}", out)


def _run_formats() -> dict[str, Any]:
    """What `forge report --format` writes for a run: the renderers by format name."""
    from forge.report.render import FORMATS
    from forge.report.run_html import leaderboard_html

    return {**FORMATS, "html": leaderboard_html}


def _check_format(fmt: str | None, formats: dict[str, Any], what: str, field: str = "--format") -> None:
    if fmt and fmt not in formats:
        raise ForgeInputError(field, f"unknown format {fmt!r} for {what}; {allowed_list(fmt, formats)}")


@app.command()
def ops() -> None:
    """List the operators with their dimensions, attributes and the target kinds that generate them."""
    from forge.generators.ascendc.base import PLANS
    from forge.generators.c.spaces import SPACES
    from forge.generators.cuda import MODULES
    from forge.ops import OPS

    generators = {"cpu": SPACES, "cuda": MODULES, "ascend": PLANS}
    rows = []
    for op in OPS.values():
        attrs = ", ".join(f"{k}={v}" for k, v in op.attr_defaults.items())
        default = ",".join(f"{k}={v}" for k, v in op.default_shape.items())
        kinds = ", ".join(kind for kind, ops_there in generators.items() if op.name in ops_there)
        rows.append((op.name, ", ".join(op.dims), default, attrs, kinds, op.description))
    print_fitted(out, ("op", "dimensions", "default shape", "attributes", "targets", "description"), rows,
                 keys=("op",), wrap=("attributes", "description"))


@app.command()
def targets(name: Optional[str] = typer.Argument(None, help="show one target's numbers and sources")) -> None:
    """List the hardware targets (or show one in full)."""
    from forge.targets import all_targets, get_target

    if name:
        from forge.targets import Target

        t = get_target(name)
        out.print_json(data=t.model_dump())
        units = "; ".join(f"{k}: {f.description}" for k, f in Target.model_fields.items() if f.description)
        out.print(f"fields: {units}; details: the {t.kind} backend's own constants, their unit in their name "
                  "(_bytes, _hz, _mhz, _s, _per_cycle; l2_bandwidth in bytes/s)", highlight=False)
        return
    rows = [(t.name, t.kind, t.description + (" (partial: some numbers unknown)" if t.partial else ""))
            for t in all_targets().values()]
    print_fitted(out, ("target", "kind", "description"), rows, keys=("target", "kind"), wrap=("description",))


def _register_extra_commands() -> None:
    for name in EXTRA_COMMANDS:
        importlib.import_module(f"forge.commands.{name}").register(app)


_register_extra_commands()


_TERMINATED: list[int] = []


def _interrupt_on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM (a scheduler's stop, `kill`) ends a run the way Ctrl-C does: what was measured is
    recorded, the run says how to resume, the build pool is shut down; the exit status is still
    SIGTERM's (143)."""
    _TERMINATED.append(signum)
    raise KeyboardInterrupt


def main() -> None:
    if signal.getsignal(signal.SIGINT) is _aborted_while_loading:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt_on_sigterm)
    try:
        # Without standalone mode the CLI library returns (not raises) the code of a typer.Exit.
        code = app(standalone_mode=False)
        if _TERMINATED:
            sys.exit(128 + _TERMINATED[0])
        if isinstance(code, int) and code:
            sys.exit(code)
    except ForgeInputError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)   # one line, never cut
        sys.exit(2)
    except (typer.Abort, KeyboardInterrupt):
        err.print("aborted")
        sys.exit(130)
    except BrokenPipeError:
        # the reader went away (`forge report RUN | head`): no traceback, and the status rich's
        # consoles give in the same case (1: the output was not all written). stdout goes to
        # /dev/null so the interpreter's final flush cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except Exception as exc:
        # Usage errors and exits of the CLI library: typer >= 0.20 raises its own vendored click's
        # classes, older ones click's, so they are recognised by shape, not by class.
        code = getattr(exc, "exit_code", None)
        if not isinstance(code, int):
            raise
        if callable(getattr(exc, "show", None)):   # a usage error: unknown option, bad value, ...
            exc.show()
            sys.exit(2)
        sys.exit(code)                            # an explicit exit (--help, typer.Exit)


if __name__ == "__main__":
    main()
