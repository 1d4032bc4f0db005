"""`forge bank show|export|import`: the tuning bank of best configs (forge/bank.py)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from forge.bank import Bank, bank_path, bank_unusable, export_bank, import_bank, is_current, offer_summary
from forge.errors import ForgeInputError
from forge.report.progress import fmt_seconds, make_console
from forge.report.tables import print_fitted
from forge.variant import config_text

bank_app = typer.Typer(help="Tuning bank: best config per (op, shape, dtype, attrs, target).", no_args_is_help=True)


@bank_app.command("show")
def show(op: Optional[str] = typer.Option(None, "--op", help="only this operator's entries"),
         target: Optional[str] = typer.Option(None, "--target", help="only this target's entries")) -> None:
    """List the banked configs and the hit/add/update counters."""
    from forge.ops import get_op
    from forge.targets import get_target

    if op:
        get_op(op)            # an unknown name is an input error, not an empty table
    if target:
        get_target(target)
    console = make_console()
    if not bank_path().exists():            # nothing to show: listing it must not create it
        console.print(f"no tuning bank yet at {bank_path()} (forge tune makes it)", highlight=False)
        return
    _check_bank()
    with Bank() as bank:
        entries = [e for e in bank.entries() if (not op or e["op"] == op) and (not target or e["target"] == target)]
        counters = bank.counters()
    rows = []
    for e in entries:
        known = [d for d in _dims(e["op"]) if d in e["shape"]]
        dims = known + sorted(set(e["shape"]) - set(known))        # the op's order first, nothing hidden
        rows.append((e["op"], e["target"], ",".join(f"{d}={e['shape'][d]}" for d in dims), e["dtype"],
                     ",".join(f"{k}={v}" for k, v in e["attrs"].items() if v not in (None, False)),
                     config_text(e["config"]), fmt_seconds(e["median"]), e["time_kind"],
                     str(e["searched"]) if e["searched"] else "—",
                     "current" if is_current(e) else "stale (other generator/model version)"))
    print_fitted(console, ("op", "target", "shape", "dtype", "attrs", "config", "median", "kind", "searched",
                           "code"), rows,
                 keys=("op", "target", "shape", "dtype"), wrap=("config", "code"), title=str(bank_path()))
    console.print("since the bank was made: " + ", ".join(f"{k} {v}" for k, v in counters.items()))


def _check_bank() -> None:
    """The bank is what these commands are about: one that cannot be opened is an input error."""
    why = bank_unusable()
    if why:
        raise ForgeInputError("FORGE_BANK" if os.environ.get("FORGE_BANK") else "bank", why)


def _dims(op: str) -> tuple[str, ...]:
    """The operator's dimension order (an op this forge does not know: none)."""
    from forge.errors import ForgeInputError
    from forge.ops import get_op

    try:
        return get_op(op).dims
    except ForgeInputError:
        return ()


@bank_app.command("export")
def export(file: Path = typer.Argument(..., help="JSON file to write")) -> None:
    """Write every banked entry to a JSON file."""
    _check_bank()
    n = export_bank(file)
    typer.echo(f"exported {n} {'entry' if n == 1 else 'entries'} to {file}")


@bank_app.command("import")
def import_(file: Path = typer.Argument(..., help="JSON file from `forge bank export`")) -> None:
    """Merge an export: an entry replaces the bank's only when it beats it.

    An entry made by another version of the target's generators or model never replaces one made
    by this version."""
    _check_bank()
    typer.echo(f"imported {file} into {bank_path()}: {offer_summary(import_bank(file))}")


def register(app: typer.Typer) -> None:
    app.add_typer(bank_app, name="bank")
