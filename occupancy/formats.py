"""Machine-readable renderers for `check`: JSON, JUnit XML, GitHub annotations, SARIF 2.1.0."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from . import __version__
from .check import Verdict

RULE_ID = "occupancy/launch-config"


def check_json(manifest: str, verdicts: Sequence[Verdict]) -> str:
    results = [{
        "kernel": v.kernel, "device": v.device, "line": v.line, "ok": v.ok,
        "active_blocks_per_sm": v.active_blocks_per_sm, "occupancy": v.occupancy,
        "limiters": list(v.limiters), "registers_per_thread": v.registers_per_thread,
        "registers_source": v.registers_source, "problems": list(v.problems),
    } for v in verdicts]
    passed = sum(v.ok for v in verdicts)
    return json.dumps({"manifest": manifest, "results": results, "passed": passed,
                       "failed": len(verdicts) - passed}, indent=2)


def check_junit(manifest: str, verdicts: Sequence[Verdict]) -> str:
    failed = sum(not v.ok for v in verdicts)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuites name="occupancy check" tests="{len(verdicts)}" failures="{failed}">',
           f'  <testsuite name={quoteattr(manifest)} tests="{len(verdicts)}" failures="{failed}" '
           'errors="0" skipped="0">']
    for v in verdicts:
        name = quoteattr(f"{v.kernel} on {v.device}")
        classname = quoteattr(f"occupancy.{v.device}")
        if v.ok:
            out.append(f"    <testcase name={name} classname={classname} "
                       f"file={quoteattr(manifest)} line=\"{v.line}\"/>")
        else:
            msg = "; ".join(v.problems)
            out.append(f"    <testcase name={name} classname={classname} "
                       f"file={quoteattr(manifest)} line=\"{v.line}\">")
            out.append(f"      <failure message={quoteattr(msg)} type=\"launch-config\">"
                       f"{escape(msg)}</failure>")
            out.append("    </testcase>")
    out += ["  </testsuite>", "</testsuites>"]
    return "\n".join(out) + "\n"


def _gh_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def check_github(manifest: str, verdicts: Sequence[Verdict]) -> str:
    """Workflow commands: one ::error per failing problem, pointing at the manifest line."""
    lines = [f"::error file={_gh_escape(manifest, True)},line={v.line},"
             f"title={_gh_escape(f'{v.kernel} on {v.device}', prop=True)}::{_gh_escape(p)}"
             for v in verdicts for p in v.problems]
    passed = sum(v.ok for v in verdicts)
    lines.append(f"::notice::occupancy check: {passed} passed, {len(verdicts) - passed} failed")
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
            "properties": {"kernel": v.kernel, "device": v.device, "occupancy": v.occupancy,
                           "activeBlocksPerSm": v.active_blocks_per_sm},
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
