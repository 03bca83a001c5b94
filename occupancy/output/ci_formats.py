"""Machine-readable renderers for `check`: JSON, JUnit XML, GitHub annotations, SARIF 2.1.0."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from occupancy.core.version import __version__
from occupancy.gate.check import Verdict, tally
from occupancy.inputs.safety import one_line, xml_text

RULE_ID = "occupancy/launch-config"


def check_json(manifest: str, verdicts: Sequence[Verdict]) -> str:
    from occupancy.output.serialize import check_dict

    return json.dumps(check_dict(manifest, verdicts), indent=2)


def _x(text: str) -> str:
    """XML text, one line: control, bidi and line-separator characters as escapes."""
    return escape(xml_text(one_line(text)))


def _xa(text: str) -> str:
    return quoteattr(xml_text(one_line(text)))


def check_junit(manifest: str, verdicts: Sequence[Verdict]) -> str:
    passed, failed, errors = tally(verdicts)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuites name="occupancy check" tests="{len(verdicts)}" failures="{failed}" '
           f'errors="{errors}">',
           f'  <testsuite name={_xa(manifest)} tests="{len(verdicts)}" failures="{failed}" '
           f'errors="{errors}" skipped="0">']
    for v in verdicts:
        attrs = (f"name={_xa(f'{v.kernel} on {v.device}')} classname={_xa(f'occupancy.{v.device}')} "
                 f"file={_xa(manifest)} line=\"{v.line}\"")
        if v.ok:
            out.append(f"    <testcase {attrs}/>")
            continue
        msg = "; ".join(v.problems)
        tag, kind = ("error", "unreadable") if v.status == "error" else ("failure", "launch-config")
        out.append(f"    <testcase {attrs}>")
        out.append(f"      <{tag} message={_xa(msg)} type=\"{kind}\">{_x(msg)}</{tag}>")
        out.append("    </testcase>")
    out += ["  </testsuite>", "</testsuites>"]
    return "\n".join(out) + "\n"


def _gh_escape(text: str, prop: bool = False) -> str:
    """GitHub workflow-command escaping: % CR LF always, and : , in properties."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return one_line(text)  # any other control character or lone surrogate, as an escape


def check_github(manifest: str, verdicts: Sequence[Verdict]) -> str:
    """Workflow commands: one ::error per failing problem, pointing at the manifest line."""
    lines = [f"::error file={_gh_escape(manifest, True)},line={v.line},"
             f"title={_gh_escape(f'{v.kernel} on {v.device}', prop=True)}::{_gh_escape(p)}"
             for v in verdicts for p in v.problems]
    passed, failed, errors = tally(verdicts)
    lines.append(f"::notice::occupancy check: {passed} passed, {failed} failed"
                 + (f", {errors} errors" if errors else ""))
    return "\n".join(lines) + "\n"


def check_sarif(manifest: str, verdicts: Sequence[Verdict]) -> str:
    results: list[dict[str, Any]] = [
        {
            "ruleId": RULE_ID,
            "level": "error",
            "message": {"text": f"{v.kernel} on {v.device}: {p}"},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": manifest},
                "region": {"startLine": v.line},
            }}],
            "properties": {"kernel": v.kernel, "device": v.device, "status": v.status,
                           "occupancy": v.occupancy, "activeBlocksPerSm": v.active_blocks_per_sm},
        }
        for v in verdicts for p in v.problems
    ]
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "occupancy",
                "version": __version__,
                "informationUri": "https://pypi.org/project/occupancy/",
                "rules": [{
                    "id": RULE_ID,
                    "name": "LaunchConfig",
                    "shortDescription": {"text": "A kernel launch that cannot run or falls "
                                                 "under its occupancy floor"},
                    "defaultConfiguration": {"level": "error"},
                }],
            }},
            "results": results,
        }],
    }
    return json.dumps(doc, indent=2)
