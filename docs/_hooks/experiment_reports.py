"""MkDocs hook: the experiment reports join the site.

Every experiment writes its report under ``experiments/results/<name>/`` (``results.md``,
``notes.md``, the plots they show and the JSON/CSV they are made from; a run's scratch
``runs/`` folder is left out). The docs link to them as files of the repository
(``../experiments/results/<name>/results.md`` from a top-level page), so the links also work
when the Markdown is read on a code host. This hook publishes those reports under
``experiments/results/`` in the site and points the links there.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File, Files, InclusionLevel

ROOT = Path(__file__).resolve().parents[2]
REPORTS = "experiments/results"
KINDS = {".md", ".png", ".svg", ".json", ".jsonl", ".csv", ".txt"}  # reports and what they link to
LINK = re.compile(r"\]\(((?:\.\./)+)(experiments/results/[^)\s]*)\)")


def on_files(files: Files, config) -> Files:
    folder = ROOT / REPORTS
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(ROOT).as_posix()
        if path.is_file() and path.suffix in KINDS and "/runs/" not in rel:
            files.append(
                File(
                    rel,
                    src_dir=str(ROOT),
                    dest_dir=config["site_dir"],
                    use_directory_urls=config["use_directory_urls"],
                    inclusion=InclusionLevel.NOT_IN_NAV,
                )
            )
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    depth = page.file.src_uri.count("/")  # folders between the page and the docs root

    def inside(match: re.Match) -> str:
        ups, target = match.group(1), match.group(2)
        if ups.count("../") != depth + 1:  # not a link to the repository's reports
            return match.group(0)
        return f"]({posixpath.join('../' * depth, target) if depth else target})"

    if page.file.src_uri.startswith(REPORTS):
        return markdown
    return LINK.sub(inside, markdown)
