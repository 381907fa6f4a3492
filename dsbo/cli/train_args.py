"""The command line of ``python -m dsbo.train`` before LightningCLI parses it, and its errors
after: zoo models by class name, the datamodule's mode, dsbo's shared option spellings, and one
line for each kind of error.

jsonargparse resolves ``--model SimpleSMB`` by class name only among the classes it has seen,
and calls a name ambiguous when two import paths reach it (``dsbo_zoo.smb.SimpleSMB`` and its
re-export in ``dsbo_zoo``): :func:`import_zoo` imports every zoo module and
:func:`expand_model_names` writes the full class path. :func:`names_datamodule_class` decides
whether ``data`` names a LightningDataModule class (subclass mode) or configures
:class:`~dsbo.data.ObservationDataModule` directly. :func:`shared_spellings` maps the options
every dsbo command shares (:mod:`dsbo.cli.common`) to Lightning's spelling.

jsonargparse reports a wrong option with its whole union-type diagnosis (some 60 lines of
usage), and a data module refusing its settings as a 77-line union report:
:func:`short_argument_error` and :func:`instantiation_error` reduce them to the key at fault,
what is wrong and, for a misspelt option, the closest accepted name (:mod:`difflib`, as
argparse's own suggestions).
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import pkgutil
import re
import sys
import warnings
from argparse import ArgumentError
from collections.abc import Sequence
from pathlib import Path

import pytorch_lightning as pl
import yaml

from dsbo.errors import DsboError

#: Package whose modules are imported so that ``--model SimpleSMB`` resolves by class name.
ZOO_PACKAGE = "dsbo_zoo"
#: LightningCLI's subcommands (a dry run parses the arguments without one).
SUBCOMMANDS = ("fit", "validate", "test", "predict")


def import_zoo() -> list[str]:
    """Import every module of the zoo package so jsonargparse finds its LightningModules by
    class name; returns the modules imported (a module that fails to import is skipped with a
    warning naming it)."""
    package = importlib.import_module(ZOO_PACKAGE)
    names = [f"{ZOO_PACKAGE}.{m.name}" for m in pkgutil.iter_modules(package.__path__)]
    imported = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # one broken zoo module must not take the others down
            warnings.warn(
                f"zoo module {name} failed to import, its models are unavailable: {exc!r}",
                stacklevel=2,
            )
        else:
            imported.append(name)
    return imported


def zoo_classes() -> dict[str, str]:
    """Class name -> full class path of every concrete LightningModule defined in the
    (imported) zoo (not the abstract base :class:`dsbo_zoo.base.ZooModule`)."""
    found: dict[str, str] = {}
    for name in import_zoo():
        for obj in vars(sys.modules[name]).values():
            concrete = isinstance(obj, type) and not inspect.isabstract(obj)
            if concrete and issubclass(obj, pl.LightningModule) and obj.__module__ == name:
                found.setdefault(obj.__name__, f"{name}.{obj.__qualname__}")
    return found


def expand_model_names(args: Sequence[str], classes: dict[str, str]) -> list[str]:
    """``--model SimpleSMB`` -> ``--model dsbo_zoo.smb.SimpleSMB``: a zoo class is also
    re-exported by ``models/__init__``, which jsonargparse would call ambiguous."""
    out = list(args)
    for i, arg in enumerate(out):
        if arg == "--model" and i + 1 < len(out) and out[i + 1] in classes:
            out[i + 1] = classes[out[i + 1]]
        elif arg.startswith("--model=") and arg[len("--model=") :] in classes:
            out[i] = "--model=" + classes[arg[len("--model=") :]]
    return out


def names_datamodule_class(args: Sequence[str]) -> bool:
    """Whether ``args`` pick the datamodule by class: ``--data <class>``, ``--data.class_path``,
    or a ``--config`` file whose ``data`` has a ``class_path``. Then the CLI takes any
    ``LightningDataModule`` (subclass mode); otherwise ``data`` configures
    :class:`~dsbo.data.ObservationDataModule` directly, as every observation config does."""
    args = list(args)
    for i, arg in enumerate(args):
        if arg in ("--data", "--data.class_path") or arg.startswith(
            ("--data=", "--data.class_path=")
        ):
            return True
        path = (
            arg[len("--config=") :]
            if arg.startswith("--config=")
            else (args[i + 1] if arg == "--config" and i + 1 < len(args) else None)
        )
        if path and Path(path).is_file():
            try:
                data = (yaml.safe_load(Path(path).read_text()) or {}).get("data")
            except (yaml.YAMLError, AttributeError):
                continue  # jsonargparse reports a malformed config
            if isinstance(data, str) or (isinstance(data, dict) and "class_path" in data):
                return True
    return False


def instantiation_error(exc: BaseException) -> str | None:
    """One line for an error raised while the config's classes are built: the dsbo error in
    the chain, the class's own message from jsonargparse's union report (``HierarchicalDataModule:
    name='labour' needs the environment variable DSBO_DATA (or set path)``) or a missing file;
    ``None`` for anything else (a bug: its traceback is worth seeing)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, DsboError):
            return str(seen)
        seen = seen.__cause__ or seen.__context__
    lines = [line.strip() for line in str(exc).splitlines()]
    if (
        "Does not validate against any of the Union subtypes" in lines[0]
    ):  # one "- Class: why" per subtype
        reasons = [
            line[2:]
            for line in lines
            if line.startswith("- ") and not line.startswith("- Expected a")
        ]
        return reasons[0] if reasons else None
    return f"{exc.filename or exc}: no such file" if isinstance(exc, FileNotFoundError) else None


def short_argument_error(exc: ArgumentError) -> str:
    """One line from jsonargparse's nested report: the key, what is wrong, and a suggestion.

    ``--model.widht 5`` gives ``model.widht: SimpleSMB has no option 'widht' (did you mean
    'width'?)`` instead of the ~60 lines of usage and union-type diagnostics.
    """
    text = str(exc)
    key = re.search(r'Parser key "([^"]+)"', text)
    option = re.search(r"Option '([^']+)' is not accepted", text)
    class_path = re.search(r"class_path '([^']+)'", text)
    if option:
        name = option.group(1)
        where = f"{key.group(1)}.{name}" if key else name
        owner, accepted = "it", []
        if class_path:
            module_name, _, cls_name = class_path.group(1).rpartition(".")
            cls = getattr(sys.modules.get(module_name), cls_name, None)
            if cls is not None:
                owner = cls_name
                accepted = [
                    p for p in inspect.signature(cls).parameters if p not in ("self", "in_dim")
                ]
        close = difflib.get_close_matches(name, accepted, n=1)
        return f"{where}: {owner} has no option {name!r}" + (
            f" (did you mean {close[0]!r}?)" if close else ""
        )
    if key and key.group(1) == "model" and "Expected a path" in text:
        return "model: not a zoo model; choose one of " + ", ".join(sorted(zoo_classes()))
    keys = re.findall(r'Parser key "([^"]+)":\s*\n\s*(?!Does not validate)(.+)', text)
    if keys:  # the innermost key with its message, e.g. model.width: Expected a <class 'int'>
        path = ".".join(re.findall(r'Parser key "([^"]+)"', text))
        return f"{path}: {keys[-1][1].strip()}"
    noise = (
        "Subtypes:",
        "Errors:",
        "Given value",
        "- Expected a <class 'NoneType'>",
        "Does not validate",
    )
    lines = [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith(noise)
    ]
    return " ".join(lines[:3])


def shared_spellings(argv: Sequence[str]) -> tuple[list[str], bool]:
    """The command line with the shared options of :mod:`dsbo.cli.common` in Lightning's
    spelling (``--seed N`` is ``--seed_everything N``; ``--config`` is LightningCLI's own and
    ``--run_dir`` an argument of :class:`~dsbo.cli.train_cli.DsboTrainCLI`), and whether
    ``--dry_run`` was given (removed from the line: LightningCLI does not know it)."""
    out: list[str] = []
    for arg in argv:
        if arg == "--seed" or arg.startswith("--seed="):
            arg = "--seed_everything" + arg[len("--seed") :]
        out.append(arg)
    dry_run = "--dry_run" in out
    return [a for a in out if a != "--dry_run"], dry_run


__all__ = [
    "SUBCOMMANDS",
    "ZOO_PACKAGE",
    "expand_model_names",
    "import_zoo",
    "instantiation_error",
    "names_datamodule_class",
    "shared_spellings",
    "short_argument_error",
    "zoo_classes",
]
